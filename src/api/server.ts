import { createServer, type RequestListener, type Server } from 'node:http';
import { answerParserErrors } from '../net/parser-errors';
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
  answerParserErrors(server, ({ status, type, message }, requestId) => ({ error: { message, type, code: status, request_id: requestId } }));
  return server;
}
