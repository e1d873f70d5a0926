import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
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
    if (error.code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const requestId = randomUUID();
    const body = JSON.stringify({
      error: {
        message: tooLarge ? 'the request headers are too large (16 KB in all at most)' : 'the request is not valid HTTP',
        type: tooLarge ? 'request_too_large' : 'invalid_request_error',
        code: status,
        request_id: requestId,
      },
    });
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  return server;
}
