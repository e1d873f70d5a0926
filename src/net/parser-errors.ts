import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { boundUnreadBodies, continueWhenBodyIsRead } from '../read-body';

export interface RefusalAnswer {
  status: number;
  type: 'request_too_large' | 'invalid_request_error';
  message: string;
}

/** What a request Node's parser refused is told: the status Node itself would answer. */
export function clientErrorAnswer(code: string | undefined): RefusalAnswer {
  if (code === 'HPE_HEADER_OVERFLOW') return { status: 431, type: 'request_too_large', message: 'the request headers are too large (16 KB in all at most)' };
  // The request did not arrive in time (headersTimeout, requestTimeout): the client may retry.
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, type: 'invalid_request_error', message: 'the request did not arrive in time; retry it' };
  return { status: 400, type: 'invalid_request_error', message: 'the request is not valid HTTP' };
}

/** How a server renders a refusal in its own error shape; `path` when the request line was read. */
export type RenderRefusal = (answer: RefusalAnswer, requestId: string, path: string | undefined) => unknown;

/**
 * An HTTP server whose every answer, even to a request Node would refuse itself, is in the
 * server's own error shape with a request id: headers over Node's 16 KB limit, a malformed
 * request, one that did not arrive in time (Node's parser), an HTTP/1.1 request without Host
 * and an `Expect` other than 100-continue (Node answers both with a bare status line). A body
 * is read only once the app asks for it (`Expect: 100-continue` answered then).
 */
export function createRefusingServer(listener: RequestListener, render: RenderRefusal, headers: (requestId: string) => Record<string, string> = () => ({})): Server {
  const server = createServer({ requireHostHeader: false }, (req, res) => {
    // RFC 9112 §3.2: a request of HTTP/1.1 without Host is 400.
    if (req.httpVersion === '1.1' && req.headers.host === undefined) {
      return answer(req, res, { status: 400, type: 'invalid_request_error', message: 'the Host header is required' }, render, headers);
    }
    boundUnreadBodies(req, res);
    listener(req, res);
  });
  continueWhenBodyIsRead(server);
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) =>
    answer(req, res, { status: 417, type: 'invalid_request_error', message: 'the only expectation supported is Expect: 100-continue' }, render, headers),
  );
  server.on('clientError', (error: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    // As Node's own handler: no answer on a connection whose response in progress has begun
    // (another one must not be written into its middle). `_httpMessage` is that response.
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (error.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const refusal = clientErrorAnswer(error.code);
    const requestId = randomUUID();
    const body = JSON.stringify(render(refusal, requestId, requestPath(error.rawPacket)));
    const extra = Object.entries(headers(requestId))
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    socket.end(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-ID: ${requestId}\r\n${extra}Connection: close\r\n\r\n${body}`,
    );
  });
  return server;
}

function answer(req: IncomingMessage, res: ServerResponse, refusal: RefusalAnswer, render: RenderRefusal, headers: (requestId: string) => Record<string, string>): void {
  const requestId = randomUUID();
  const body = JSON.stringify(render(refusal, requestId, (req.url ?? '').split('?')[0]));
  res.writeHead(refusal.status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'X-Request-ID': requestId, ...headers(requestId), Connection: 'close' });
  res.end(body);
}

/**
 * The path of the request line at the start of what the parser refused, when it is there (best
 * effort: the refused chunk holds it when the request arrived in one read, as requests of a few
 * KB do; otherwise the refusal is in the gateway's envelope, whatever the route).
 */
function requestPath(raw: Buffer | undefined): string | undefined {
  const line = /^[A-Z]+ (\S+) HTTP\/1\.[01]\r?\n/.exec(raw?.subarray(0, 8192).toString('latin1') ?? '');
  if (!line) return undefined;
  const target = line[1]!;
  // An absolute-form target (`http://host/v1/messages`) names the path after its authority.
  const path = /^https?:\/\/[^/]*(\/[^?]*)?/i.exec(target)?.[1] ?? target.split('?')[0]!;
  return path;
}
