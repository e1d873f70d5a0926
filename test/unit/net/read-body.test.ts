import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { readBodyUpTo, type ReadOptions } from '../../../src/read-body';

/** A server whose every request reads its body with `options`, answering 200 or the refusal's status. */
async function serving(options: ReadOptions): Promise<{ server: Server; port: number }> {
  const server = createServer((req, res) => {
    readBodyUpTo({ req, res }, 1_000_000, () => Object.assign(new Error('too large'), { status: 413 }), options).then(
      (body) => res.end(String(body.length)),
      (error: { status?: number }) => {
        res.statusCode = error.status ?? 500;
        res.end();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Sends `first` bytes at once, then one byte every `everyMs` up to `chunks`; resolves with the answer's status. */
function drip(port: number, declared: number, chunks: number, everyMs: number, first = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', method: 'POST', headers: { 'content-length': String(declared) } }, (res) => {
      res.resume();
      resolve(res.statusCode!);
    });
    req.on('error', () => undefined); // the server may close while we still write
    if (first > 0) req.write('x'.repeat(first));
    let sent = first;
    const timer = setInterval(() => {
      if (sent++ >= chunks) return clearInterval(timer);
      req.write('x');
    }, everyMs);
    req.on('close', () => clearInterval(timer));
    setTimeout(() => reject(new Error('no answer')), 10_000).unref();
  });
}

test('a body of which a window brings less than the minimum rate is refused, from the start or after a fast beginning', async () => {
  const { server, port } = await serving({ minRate: { bytesPerSecond: 1000, windowMs: 200, tooSlow: () => Object.assign(new Error('slow'), { status: 408 }) } });
  try {
    expect(await drip(port, 1000, 1000, 100)).toBe(408);
    expect(await drip(port, 2000, 2000, 100, 1000)).toBe(408);
    expect(await drip(port, 100, 100, 1)).toBe(200);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});

test('onProgress sees the bytes so far and may refuse the body there', async () => {
  const seen: number[] = [];
  const { server, port } = await serving({ onProgress: (bytes) => (seen.push(bytes), bytes >= 3 ? Object.assign(new Error('busy'), { status: 503 }) : undefined) });
  try {
    expect(await drip(port, 10, 10, 20)).toBe(503);
    expect(seen).toEqual([1, 2, 3]);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
