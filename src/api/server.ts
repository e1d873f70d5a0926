import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { holdUntilSettled, trackConnections } from '../net/graceful-close';
import { createRefusingServer } from '../net/parser-errors';
import { isMessagesPath, nativeErrorType } from './middleware/error-handler';
import { CORS_HEADERS } from './middleware/cors';
import { isOAuthPath } from './routes/oauth';

/**
 * The api's HTTP server. Requests Node would refuse itself (see createRefusingServer) get the
 * gateway's error envelope and a request id like any other error (the provider-native one on
 * the messages routes, OAuth's on the OAuth routes). Its connections are tracked from the
 * start, for closeGracefully (src/net/graceful-close.ts).
 */
export function createApiServer(app: { callback(): (req: IncomingMessage, res: ServerResponse) => unknown }): Server {
  const handle = app.callback();
  const server = createRefusingServer(
    // A handler may still meter a stream's usage after its response ended: shutdown waits for it.
    (req, res) => holdUntilSettled(req, handle(req, res)),
    ({ status, type, message }, requestId, path) =>
      path !== undefined && isMessagesPath(path)
        ? { type: 'error', error: { type: nativeErrorType(status), message, request_id: requestId } }
        : path !== undefined && isOAuthPath(path)
          ? { error: 'invalid_request', error_description: message }
          : { error: { message, type, code: status, request_id: requestId } },
    // As on every other answer: both request-id headers, and readable by a page of any origin.
    (requestId) => ({ 'request-id': requestId, ...CORS_HEADERS }),
  );
  // Longer than clients' idle keep-alive, so a reused connection is never closed by the
  // server at the moment a request is sent on it.
  server.keepAliveTimeout = 65_000;
  trackConnections(server);
  return server;
}
