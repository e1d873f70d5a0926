import { connect, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * A TCP proxy to a local service that can stop forwarding without closing anything: what a
 * network partition looks like to a client (connections stay open, nothing comes back).
 */
export interface FreezableProxy {
  /** host:port to connect to instead of the service. */
  address: string;
  port: number;
  frozen: boolean;
  close(): Promise<void>;
}

export async function startFreezableProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<FreezableProxy> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(targetPort, targetHost);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      sockets.add(from);
      from.on('data', (chunk) => proxy.frozen || to.write(chunk));
      from.on('error', () => undefined);
      from.on('close', () => {
        sockets.delete(from);
        to.destroy();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const proxy: FreezableProxy = {
    address: `127.0.0.1:${port}`,
    port,
    frozen: false,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => server.close(resolve));
    },
  };
  return proxy;
}
