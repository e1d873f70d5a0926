import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Socket } from 'node:net';

/** What a request Node's parser refused is told: the status Node itself would answer. */
export function clientErrorAnswer(code: string | undefined): { status: number; type: 'request_too_large' | 'invalid_request_error'; message: string } {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, type: 'request_too_large', message: 'the request headers are too large (16 KB in all at most)' };
  // The request did not arrive in time (headersTimeout, requestTimeout): the client may retry.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, type: 'invalid_request_error', message: 'the request did not arrive in time; retry it' };
  return { status: 400, type: 'invalid_request_error', message: 'the request is not valid HTTP' };
}

/**
 * Requests Node's parser refuses before the app sees them (headers over its 16 KB limit, a
 * malformed request line, a request that did not arrive in time) would get a bare status line
 * with no body: they get the server's own error body (`render`) and a request id instead.
 */
export function answerParserErrors(server: Server, render: (answer: ReturnType<typeof clientErrorAnswer>, requestId: string) => unknown): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // As Node's own handler: no answer on a connection whose response in progress has begun
    // (another one must not be written into its middle). `_httpMessage` is that response.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const answer = clientErrorAnswer(error.code);
    const requestId = randomUUID();
    const body = JSON.stringify(render(answer, requestId));
    socket.end(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}
