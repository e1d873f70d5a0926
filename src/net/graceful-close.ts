import { setMaxListeners } from 'node:events';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Graceful close of an HTTP server (the api's and the platform api's).
 *
 * Node's `server.close()` stops listening and closes the connections idle at that moment, then
 * waits for every other connection to end by itself. Some never do: a keep-alive client sends
 * its next request on the same connection, a connection that has sent nothing (or half a
 * request head) is not idle to Node, and an event stream has no end. The process then waits
 * out its grace period and is killed with requests still in flight. Here, once closing:
 *
 * - no connection is accepted (the listening socket is closed);
 * - a connection with no request in flight is closed at once; any other one right after its
 *   last response, which says `Connection: close` (when its head was not sent yet);
 * - `closing` (shutdownSignals) tells endless responses (event streams) to end now: their
 *   clients reconnect, to another instance;
 * - after the drain window, `ending` tells requests still in flight to end through their
 *   failure path (a streamed completion ends with its protocol's error event, billed for what
 *   was produced); connections still open `endMs` later are cut.
 *
 * Connections are only known from the moment trackConnections is called: call it when the
 * server is created, before it listens.
 */

export interface ShutdownSignals {
  /** Aborts when the server starts closing: responses that never end by themselves end now. */
  readonly closing: AbortSignal;
  /** Aborts when the drain window is over: requests still in flight end through their failure path now. */
  readonly ending: AbortSignal;
}

export interface CloseOptions {
  /** How long requests in flight may take to finish before `ending` aborts. */
  drainMs: number;
  /** How long handlers have after `ending` to end their responses before connections are cut. */
  endMs?: number;
}

export interface CloseReport {
  /** From the call until every connection had closed and every held handler had settled. */
  ms: number;
  /** Requests still in flight when the drain window ended (told to end through `ending`). */
  ended: number;
  /** Connections still open `endMs` after that, cut. */
  cut: number;
}

interface Tracking {
  closing: AbortController;
  ending: AbortController;
  /** Open connections, each with its responses not finished yet. */
  connections: Map<Socket, Set<ServerResponse>>;
  /** Handlers (holdUntilSettled) still running. */
  handlers: Set<Promise<void>>;
}

const servers = new WeakMap<Server, Tracking>();
const requests = new WeakMap<IncomingMessage, Tracking>();

/** Starts tracking the server's connections and the requests in flight on each (idempotent). */
export function trackConnections(server: Server): void {
  if (servers.has(server)) return;
  const tracking: Tracking = { closing: new AbortController(), ending: new AbortController(), connections: new Map(), handlers: new Set() };
  // Every long-lived response listens to these two: no listener-count warning at eleven.
  setMaxListeners(0, tracking.closing.signal, tracking.ending.signal);
  servers.set(server, tracking);

  const connectionOf = (socket: Socket): Set<ServerResponse> => {
    let inFlight = tracking.connections.get(socket);
    if (!inFlight) {
      tracking.connections.set(socket, (inFlight = new Set()));
      socket.once('close', () => tracking.connections.delete(socket));
    }
    return inFlight;
  };
  server.on('connection', (socket: Socket) => {
    connectionOf(socket);
    // Accepted before the listening socket closed, announced after: nothing will be served on it.
    if (tracking.closing.signal.aborted) socket.destroy();
  });
  // Ahead of the server's own listener, so a request is counted before its handler runs.
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    requests.set(req, tracking);
    const socket = req.socket;
    const inFlight = connectionOf(socket);
    inFlight.add(res);
    if (tracking.closing.signal.aborted) res.shouldKeepAlive = false;
    const done = () => {
      if (!inFlight.delete(res)) return;
      if (tracking.closing.signal.aborted && inFlight.size === 0) closeAfterWrites(socket);
    };
    res.once('finish', done);
    res.once('close', done);
  });
}

/** The shutdown signals of the server the request came to (signals that never abort when it is not tracked). */
export function shutdownSignals(req: IncomingMessage): ShutdownSignals {
  const tracking = requests.get(req);
  if (tracking) return { closing: tracking.closing.signal, ending: tracking.ending.signal };
  return { closing: new AbortController().signal, ending: new AbortController().signal };
}

/**
 * Counts a request handler's promise (Koa's, which settles once its middleware has returned)
 * as part of the request: closeGracefully waits for it too, so whatever the handler does
 * after its response went out (metering a stream's usage) is done before the caller closes
 * its pools.
 */
export function holdUntilSettled(req: IncomingMessage, done: unknown): void {
  const tracking = requests.get(req);
  if (!tracking || typeof (done as PromiseLike<unknown> | undefined)?.then !== 'function') return;
  const held: Promise<void> = Promise.resolve(done as PromiseLike<unknown>).then(
    () => undefined,
    () => undefined,
  );
  tracking.handlers.add(held);
  void held.then(() => tracking.handlers.delete(held));
}

/**
 * Closes the server as the module comment says. Resolves once every connection has closed and
 * every held handler has settled (or, past the drain window, `endMs` after its connections
 * were cut: handlers that still run then are not waited for).
 */
export async function closeGracefully(server: Server, { drainMs, endMs = 1_000 }: CloseOptions): Promise<CloseReport> {
  const started = performance.now();
  trackConnections(server);
  const tracking = servers.get(server)!;
  // (Called when the server is not listening, close reports an error: closed all the same.)
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  tracking.closing.abort(new Error('the server is shutting down'));
  for (const [socket, inFlight] of tracking.connections) {
    if (inFlight.size === 0) socket.destroy();
    // Node then says `Connection: close` and ends the connection after the response.
    else for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false;
  }
  const settled = closed.then(async () => {
    while (tracking.handlers.size > 0) await Promise.all([...tracking.handlers]);
  });
  const report: CloseReport = { ms: 0, ended: 0, cut: 0 };
  if (!(await within(settled, drainMs))) {
    for (const inFlight of tracking.connections.values()) report.ended += inFlight.size;
    tracking.ending.abort(new Error('the drain window is over'));
    if (!(await within(closed, endMs))) {
      for (const socket of tracking.connections.keys()) {
        report.cut += 1;
        socket.destroy();
      }
      await closed;
    }
    // Handlers whose connection was cut unwind now (their upstream call is aborted).
    await within(settled, endMs);
  }
  report.ms = Math.round(performance.now() - started);
  return report;
}

/** As Node ends a `Connection: close` response's connection: FIN once what was written is out, then close. */
function closeAfterWrites(socket: Socket): void {
  if (socket.destroyed) return;
  socket.end();
  if (socket.writableFinished) socket.destroy();
  else socket.once('finish', () => socket.destroy());
}

/** Whether `promise` settles within `ms`. */
async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
