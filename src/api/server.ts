import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { continueWhenBodyIsRead } from '../read-body';

/**
 * The api's HTTP server. Requests Node's parser refuses before the app sees them (headers
 * over its 16 KB limit, a malformed request line) would get a bare status line with no body;
 * they get the gateway's error envelope and a request id like any other error.
 */
export function createApiServer(app: { callback(): RequestListener }): Server {
  const server = createServer(app.callback());
  // Longer than clients' idle keep-alive, so a reused connection is never closed by the
  // server at the moment a request is sent on it.
  server.keepAliveTimeout = 65_000;
  continueWhenBodyIsRead(server);
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    // As Node's own handler: no answer on a connection whose response in progress has begun
    // (another one must not be written into its middle). `_httpMessage` is that response.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const { status, type, message } = clientErrorAnswer(error.code);
    const requestId = randomUUID();
    const body = JSON.stringify({ error: { message, type, code: status, request_id: requestId } });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

/** What a request Node's parser refused is told: the status Node itself would answer. */
export function clientErrorAnswer(code: string | undefined): { status: number; type: 'request_too_large' | 'invalid_request_error'; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, type: 'request_too_large', message: 'the request headers are too large (16 KB in all at most)' };
  // The request did not arrive in time (headersTimeout, requestTimeout): the client may retry.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, type: 'invalid_request_error', message: 'the request did not arrive in time; retry it' };
  return { status: 400, type: 'invalid_request_error', message: 'the request is not valid HTTP' };
}
