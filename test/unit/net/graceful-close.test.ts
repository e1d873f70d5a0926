import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { closeGracefully, holdUntilSettled, shutdownSignals, trackConnections } from '../../../src/net/graceful-close';

/** A tracked server on an ephemeral port, and how many connections it has accepted. */
async function serving(handler: (req: IncomingMessage, res: ServerResponse) => unknown): Promise<{ server: Server; port: number; accepted: () => number }> {
  const server = createServer((req, res) => holdUntilSettled(req, handler(req, res)));
  trackConnections(server);
  let accepted = 0;
  server.on('connection', () => (accepted += 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, accepted: () => accepted };
}

/** A raw client connection: what it received, and when the server closed it. */
async function rawClient(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  let received = '';
  let closedAt: number | undefined;
  socket.on('data', (chunk) => (received += String(chunk)));
  socket.on('error', () => undefined); // a reset is a close too
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = performance.now();
      resolve();
    }),
  );
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return { socket, closed, received: () => received, closedAt: () => closedAt };
}

/** Resolves once `predicate` holds (polled), failing after `ms`. */
async function until(predicate: () => boolean, ms = 2_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const refused = (port: number) =>
  new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });

const GET = (path: string) => `GET ${path} HTTP/1.1\r\nHost: test\r\n\r\n`;

describe('closeGracefully', () => {
  test('a keep-alive request in flight finishes with Connection: close and its connection closes after it; no new connection is accepted', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let slowArrived = false;
    const { server, port, accepted } = await serving(async (req, res) => {
      if (req.url === '/slow') {
        slowArrived = true;
        await released;
      }
      res.end(`done ${req.url}`);
    });
    // A busy keep-alive client: one request answered on this connection, the next one in flight.
    const client = await rawClient(port);
    client.socket.write(GET('/fast'));
    await until(() => client.received().endsWith('done /fast'));
    expect(client.received()).toMatch(/\r\nConnection: keep-alive\r\n/);
    client.socket.write(GET('/slow'));
    await until(() => slowArrived);

    const closing = closeGracefully(server, { drainMs: 5_000 });
    expect(await refused(port)).toBe('ECONNREFUSED');
    expect(client.closedAt()).toBeUndefined(); // its request is still in flight
    release();
    await client.closed;
    const second = client.received().slice(client.received().indexOf('done /fast') + 'done /fast'.length);
    expect(second).toMatch(/^HTTP\/1\.1 200 OK\r\n/);
    expect(second).toMatch(/\r\nConnection: close\r\n/);
    expect(second).toMatch(/done \/slow$/);
    const report = await closing;
    expect(report).toMatchObject({ ended: 0, cut: 0 });
    expect(report.ms).toBeLessThan(1_000);
    expect(accepted()).toBe(1);
  });

  test('a response whose head said keep-alive before the close began still closes its connection when it ends', async () => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const { server, port } = await serving(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain', connection: 'keep-alive' });
      res.write('first ');
      await finished;
      res.end('last');
    });
    const client = await rawClient(port);
    client.socket.write(GET('/'));
    await until(() => client.received().includes('first'));
    const closing = closeGracefully(server, { drainMs: 5_000 });
    finish();
    await client.closed;
    expect(client.received()).toMatch(/last\r\n0\r\n\r\n$/);
    expect((await closing).ms).toBeLessThan(1_000);
  });

  test('a silent connection, one with half a request head and one idle after its request are closed at once', async () => {
    const { server, port, accepted } = await serving((_req, res) => res.end('ok'));
    const silent = await rawClient(port);
    const half = await rawClient(port);
    half.socket.write('GET /never-finished HTTP/1.1\r\nHost: te');
    const idle = await rawClient(port);
    idle.socket.write(GET('/'));
    await until(() => idle.received().endsWith('ok') && accepted() === 3);

    const report = await closeGracefully(server, { drainMs: 5_000 });
    expect(report).toMatchObject({ ended: 0, cut: 0 });
    expect(report.ms).toBeLessThan(1_500);
    await Promise.all([silent.closed, half.closed, idle.closed]);
    expect(silent.received()).toBe('');
    expect(half.received()).toBe('');
  });

  test('a long-lived response is told to end as soon as the close begins', async () => {
    let ticker: NodeJS.Timeout | undefined;
    const { server, port } = await serving((req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      ticker = setInterval(() => res.write(': tick\n\n'), 20);
      shutdownSignals(req).closing.addEventListener('abort', () => {
        clearInterval(ticker);
        res.end('data: bye\n\n');
      });
    });
    const client = await rawClient(port);
    client.socket.write(GET('/stream'));
    await until(() => client.received().includes(': tick'));
    const started = performance.now();
    const report = await closeGracefully(server, { drainMs: 5_000 });
    await client.closed;
    expect(client.closedAt()! - started).toBeLessThan(1_500);
    expect(client.received()).toMatch(/data: bye\n\n\r\n0\r\n\r\n$/); // a clean end of the chunked body
    expect(report).toMatchObject({ ended: 0, cut: 0 });
    clearInterval(ticker);
  });

  test('at the end of the drain window requests in flight are told to end, and connections still open endMs later are cut', async () => {
    const seen: string[] = [];
    let hangArrived = false;
    const { server, port } = await serving((req, res) => {
      const { closing, ending } = shutdownSignals(req);
      if (req.url === '/hang') hangArrived = true;
      if (req.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        res.write('data: part\n\n');
        closing.addEventListener('abort', () => seen.push('closing'));
        // A finite response that ends through its failure path at the deadline.
        ending.addEventListener('abort', () => {
          seen.push('ending');
          res.end('event: error\ndata: shutting down\n\n');
        });
      }
      // '/hang' never answers.
    });
    const stream = await rawClient(port);
    stream.socket.write(GET('/stream'));
    const hang = await rawClient(port);
    hang.socket.write(GET('/hang'));
    await until(() => stream.received().includes('data: part') && hangArrived);

    const started = performance.now();
    const report = await closeGracefully(server, { drainMs: 200, endMs: 300 });
    await Promise.all([stream.closed, hang.closed]);
    expect(seen).toEqual(['closing', 'ending']);
    expect(stream.received()).toMatch(/event: error\ndata: shutting down\n\n\r\n0\r\n\r\n$/);
    expect(stream.closedAt()! - started).toBeLessThan(400); // at the deadline, not when cut
    expect(hang.closedAt()! - started).toBeGreaterThanOrEqual(450);
    expect(report).toMatchObject({ ended: 2, cut: 1 });
    expect(report.ms).toBeLessThan(1_500);
  });

  test('it resolves only after what handlers do past their response (metering), so the caller flushes after it', async () => {
    const order: string[] = [];
    let quickArrived = false;
    const { server, port } = await serving(async (req, res) => {
      res.once('finish', () => order.push(`response ${req.url} finished`));
      if (req.url === '/quick') quickArrived = true;
      if (req.url === '/deadline') {
        res.writeHead(200);
        res.write('partial ');
        await new Promise((resolve) => shutdownSignals(req).ending.addEventListener('abort', resolve));
        order.push('ended at the deadline');
        res.end('error');
      } else {
        await new Promise((resolve) => setTimeout(resolve, 50));
        res.end('ok');
      }
      // What relay does after writeSse: the usage row, committed a little later.
      await new Promise((resolve) => setTimeout(resolve, 100));
      order.push(`${req.url} metered`);
    });
    const deadline = await rawClient(port);
    deadline.socket.write(GET('/deadline'));
    const quick = await rawClient(port);
    quick.socket.write(GET('/quick'));
    await until(() => deadline.received().includes('partial') && quickArrived);

    await closeGracefully(server, { drainMs: 400, endMs: 1_000 });
    order.push('closed: flush queued usage, close pools');
    expect(order).toEqual(['response /quick finished', '/quick metered', 'ended at the deadline', 'response /deadline finished', '/deadline metered', 'closed: flush queued usage, close pools']);
  });

  test('requests of a server that is not tracked get signals that never abort', async () => {
    const server = createServer((req, res) => {
      const { closing, ending } = shutdownSignals(req);
      res.end(`${closing.aborted} ${ending.aborted}`);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const response = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`);
      expect(await response.text()).toBe('false false');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
