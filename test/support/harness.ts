import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Config } from '../../src/config';
import { closeDeps, createDeps, type Deps } from '../../src/deps';
import { createApp, type AppOptions } from '../../src/api/app';
import { createApiServer } from '../../src/api/server';
import { createLogger } from '../../src/logger';
import { testConfig } from './config';

export interface TestApi {
  url: string;
  deps: Deps;
  /** Every log line the api wrote, as raw JSON text. */
  logs: string[];
  close(): Promise<void>;
}

/** A log destination that keeps lines in memory, so tests can search them. */
export function captureLogs(): { lines: string[]; stream: Writable } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(...String(chunk).split('\n').filter(Boolean));
      callback();
    },
  });
  return { lines, stream };
}

/** Starts the real api on an ephemeral port against the real services. */
export async function startApi(overrides: Partial<Record<keyof Config, string>> = {}, options: AppOptions = {}): Promise<TestApi> {
  const config = testConfig(overrides);
  const { lines, stream } = captureLogs();
  const deps = createDeps(config, createLogger({ level: config.LOG_LEVEL, destination: stream }));
  const server: Server = createApiServer(createApp(deps, options));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    deps,
    logs: lines,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await closeDeps(deps);
    },
  };
}
