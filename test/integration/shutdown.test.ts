import { spawn } from 'node:child_process';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import type { Server } from 'node:http';
import { createApp } from '../../src/api/app';
import { createApiServer } from '../../src/api/server';
import { SHUTDOWN_GRACE_MS } from '../../src/bin/run';
import { closeDeps, createDeps } from '../../src/deps';
import { createLogger } from '../../src/logger';
import { closeGracefully } from '../../src/net/graceful-close';
import { createPool } from '../../src/store/db';
import { testConfig } from '../support/config';
import { bearer, createTenant, json, type Tenant } from '../support/factories';
import { captureLogs } from '../support/harness';
import { startTestSimulator, type Simulator } from '../support/simulator';

/**
 * Graceful shutdown of the real api and platform processes (`node --import tsx src/bin/….ts`,
 * as deployed): SIGTERM with an event stream open, keep-alive connections idle and busy, and
 * connections that never sent a whole request; and their one-line start-up failures.
 */
const ROOT = path.resolve(__dirname, '../..');
const config = testConfig();
const db = createPool(config.DATABASE_URL, 2);
// The provider behind the api, in this process (nothing else is listening when CI runs this).
let sim: Simulator;
beforeAll(async () => {
  sim = await startTestSimulator();
});
afterAll(async () => {
  await db.end();
  await sim.close();
});

const freePort = () =>
  new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });

interface Spawned {
  stdout: () => string;
  stderr: () => string;
  exited: Promise<{ code: number | null; at: number }>;
  signal(signal: NodeJS.Signals): number;
}

/** Spawns a process entry point; resolves once its log says `ready` (or at once when none is awaited). */
async function spawnBin(bin: 'api' | 'platform', env: Record<string, string>, ready?: string): Promise<Spawned> {
  const child = spawn(process.execPath, ['--import', 'tsx', `src/bin/${bin}.ts`], {
    cwd: ROOT,
    env: {
      ...process.env,
      ENVIRONMENT: 'development',
      LOG_LEVEL: 'info',
      DATABASE_URL: config.DATABASE_URL,
      // Nothing here runs a session, but a signal must never reach the dev system's worker.
      TEMPORAL_TASK_QUEUE: config.TEMPORAL_TASK_QUEUE,
      ELASTICSEARCH_INDEX_PREFIX: config.ELASTICSEARCH_INDEX_PREFIX,
      SIMULATOR_URL: sim.url,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk) => (stdout += String(chunk)));
  child.stderr!.on('data', (chunk) => (stderr += String(chunk)));
  const exited = new Promise<{ code: number | null; at: number }>((resolve) => child.once('exit', (code) => resolve({ code, at: performance.now() })));
  const spawned: Spawned = {
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    signal(signal) {
      child.kill(signal);
      return performance.now();
    },
  };
  if (ready) {
    const deadline = Date.now() + 45_000;
    while (!stdout.includes(ready)) {
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`${bin} did not start: ${stdout}${stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  // Whatever a test leaves running is not left behind.
  afterAllKill.push(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'));
  return spawned;
}
const afterAllKill: Array<() => unknown> = [];
afterAll(() => afterAllKill.forEach((kill) => kill()));

/** A GET held open; records how it ended: a clean end of the body, or an error (a reset). */
function holdOpen(url: string, headers: Record<string, string>) {
  let body = '';
  let outcome: { how: 'end' | 'error'; at: number; detail?: string } | undefined;
  const request = http.get(url, { headers, agent: new http.Agent({ keepAlive: true }) }, (response) => {
    response.on('data', (chunk) => (body += String(chunk)));
    response.on('end', () => (outcome ??= { how: 'end', at: performance.now() }));
    response.on('error', (error) => (outcome ??= { how: 'error', at: performance.now(), detail: error.message }));
  });
  request.on('error', (error) => (outcome ??= { how: 'error', at: performance.now(), detail: error.message }));
  return { body: () => body, outcome: () => outcome };
}

/** A connection that has sent one request and now idles (keep-alive); records when the server closed it. */
async function idleKeepAlive(port: number, path: string) {
  const socket = net.connect(port, '127.0.0.1');
  let received = '';
  let closedAt: number | undefined;
  socket.on('data', (chunk) => (received += String(chunk)));
  socket.on('error', () => undefined);
  socket.once('close', () => (closedAt = performance.now()));
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  await until(() => /\r\n\r\n\{.*\}$/s.test(received));
  expect(received).toMatch(/\r\nConnection: keep-alive\r\n/);
  return { closedAt: () => closedAt };
}

/** A connection that sent nothing, or `head` (part of a request head). */
async function rawConnection(port: number, head = '') {
  const socket = net.connect(port, '127.0.0.1');
  let closedAt: number | undefined;
  socket.on('error', () => undefined);
  socket.once('close', () => (closedAt = performance.now()));
  await new Promise((resolve) => socket.once('connect', resolve));
  if (head) socket.write(head);
  return { closedAt: () => closedAt };
}

async function until(predicate: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const connectOutcome = (port: number) =>
  new Promise<string>((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve('accepted');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
  });

const usageRows = async (tenant: Tenant) =>
  (await db.query<{ output_tokens: number; input_tokens: number }>('SELECT input_tokens::int, output_tokens::int FROM usage_records WHERE project_id = $1', [tenant.projectId])).rows;

describe('api shutdown on SIGTERM', () => {
  test('an open event stream ends cleanly at once, idle and half-open connections close, a request in flight finishes with Connection: close and is billed, and the process exits 0 well inside the grace period', async () => {
    const tenant = await createTenant(db);
    const port = await freePort();
    const api = await spawnBin('api', { PORT: String(port) }, 'api listening');
    const base = `http://127.0.0.1:${port}`;
    const post = async (route: string, body: unknown) => json(await fetch(`${base}${route}`, { method: 'POST', headers: bearer(tenant.key), body: JSON.stringify(body) }));
    const agent = await post('/v1/agents', { project_id: tenant.projectId, name: 'helper', model: 'openai/gpt-4o-mini' });
    const session = await post('/v1/sessions', { agent: agent.id });

    const stream = holdOpen(`${base}/v1beta1/sessions/${session.id}/events/stream`, bearer(tenant.key));
    await until(() => stream.body().includes(': stream open'));
    const idle = await idleKeepAlive(port, '/healthz');
    const silent = await rawConnection(port);
    const halfHead = await rawConnection(port, 'GET /healthz HTTP/1.1\r\nHost: 127.0');
    // A keep-alive client's request still waiting for the model when the signal comes.
    const inFlight = new Promise<{ status: number; connection: string | undefined; body: string }>((resolve, reject) => {
      const request = http.request(`${base}/v1/chat/completions`, { method: 'POST', headers: bearer(tenant.key), agent: new http.Agent({ keepAlive: true }) }, (response) => {
        let body = '';
        response.on('data', (chunk) => (body += String(chunk)));
        response.on('end', () => resolve({ status: response.statusCode!, connection: response.headers.connection, body }));
      });
      request.on('error', reject);
      request.end(JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: '[[delay:1500]] Hello' }] }));
    });
    await until(() => sim.requests.some((r) => JSON.stringify(r.body ?? '').includes('[[delay:1500]] Hello'))); // with the model now

    const signalledAt = api.signal('SIGTERM');
    await until(() => stream.outcome() !== undefined);
    expect(stream.outcome()).toMatchObject({ how: 'end' }); // a clean end, no reset: the client reconnects
    expect(stream.outcome()!.at - signalledAt).toBeLessThan(1_000);
    expect(await connectOutcome(port)).toBe('ECONNREFUSED');
    await until(() => idle.closedAt() !== undefined && silent.closedAt() !== undefined && halfHead.closedAt() !== undefined);
    for (const connection of [idle, silent, halfHead]) expect(connection.closedAt()! - signalledAt).toBeLessThan(1_000);

    const answered = await inFlight;
    expect(answered.status).toBe(200);
    expect(answered.connection).toBe('close');
    expect(JSON.parse(answered.body).choices[0].message.content).toContain('Hello');
    const { code, at } = await api.exited;
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(SHUTDOWN_GRACE_MS / 5);
    // Its usage was written before the pools closed.
    expect(await usageRows(tenant)).toHaveLength(1);
    expect(api.stderr()).toBe('');
    expect(api.stdout()).toMatch(/"ended":0,"cut":0,"msg":"http server closed"/);
  });
});

describe('a gateway stream still running at the end of the drain window', () => {
  let server: Server;
  afterAll(() => server?.closeAllConnections());

  test('ends with the protocol error chunk, is billed for what was produced, and its usage is written before the pools close', async () => {
    const { stream: logs } = captureLogs();
    const deps = createDeps({ ...config, SIMULATOR_URL: sim.url }, createLogger({ level: 'info', destination: logs }));
    server = createApiServer(createApp(deps));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const tenant = await createTenant(db);

    let body = '';
    const ended = new Promise<{ connection: string | undefined }>((resolve, reject) => {
      const request = http.request(`http://127.0.0.1:${port}/v1/chat/completions`, { method: 'POST', headers: bearer(tenant.key) }, (response) => {
        response.on('data', (chunk) => (body += String(chunk)));
        response.on('end', () => resolve({ connection: response.headers.connection }));
        response.on('error', reject);
      });
      request.on('error', reject);
      request.end(JSON.stringify({ model: 'openai/gpt-4o-mini', stream: true, messages: [{ role: 'user', content: '[[tokens:400]] [[pace:40]] Hello' }] }));
    });
    await until(() => (body.match(/"content":/g) ?? []).length >= 5);

    const report = await closeGracefully(server, { drainMs: 300, endMs: 2_000 });
    await closeDeps(deps); // as the api's shutdown does: queued usage rows are written first
    await ended;
    expect(report).toMatchObject({ ended: 1, cut: 0 });

    const data = body
      .split('\n\n')
      .filter((frame) => frame.startsWith('data: '))
      .map((frame) => frame.slice('data: '.length));
    expect(data).not.toContain('[DONE]');
    const last = JSON.parse(data[data.length - 1]!);
    expect(last.error).toMatchObject({ type: 'service_unavailable', code: 503, message: 'the server is shutting down; send the request again' });
    const produced = data
      .slice(0, -1)
      .map((text) => JSON.parse(text).choices?.[0]?.delta?.content ?? '')
      .join('');
    expect(produced.length).toBeGreaterThan(0);
    const rows = await usageRows(tenant);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.output_tokens).toBe(Math.ceil(produced.length / 4));
    expect(rows[0]!.input_tokens).toBeGreaterThan(0);
  });
});

test('a model call not streamed, still waiting at the end of the drain window: 503 service_unavailable, its upstream call cancelled, nothing billed', async () => {
  const deps = createDeps({ ...config, SIMULATOR_URL: sim.url }, createLogger({ level: 'silent' }));
  const server = createApiServer(createApp(deps));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const tenant = await createTenant(db);
    const { port } = server.address() as AddressInfo;
    const marker = `[[delay:5000]] slow ${tenant.projectId}`;
    const answered = fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: 'POST',
      headers: bearer(tenant.key),
      body: JSON.stringify({ model: 'openai/gpt-4o-mini', messages: [{ role: 'user', content: marker }] }),
    });
    await until(() => sim.requests.some((r) => JSON.stringify(r.body ?? '').includes(marker)));
    const report = await closeGracefully(server, { drainMs: 300, endMs: 2_000 });
    const response = await answered;
    expect(response.status).toBe(503);
    expect((await json(response)).error).toMatchObject({ type: 'service_unavailable', message: 'the server is shutting down; send the request again' });
    expect(report).toMatchObject({ ended: 1, cut: 0 });
    await until(() => sim.requests.find((r) => JSON.stringify(r.body ?? '').includes(marker))!.aborted);
    await closeDeps(deps);
    expect(await usageRows(tenant)).toHaveLength(0);
  } finally {
    server.closeAllConnections();
  }
});

describe('platform api shutdown on SIGTERM', () => {
  test('keep-alive, silent and half-sent connections close at once and the process exits 0', async () => {
    const port = await freePort();
    const platform = await spawnBin('platform', { PLATFORM_PORT: String(port) }, 'platform api listening');
    const idle = await idleKeepAlive(port, '/healthz');
    const silent = await rawConnection(port);
    const halfHead = await rawConnection(port, 'GET /healthz HTTP/1.1\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));

    const signalledAt = platform.signal('SIGTERM');
    const { code, at } = await platform.exited;
    expect(code).toBe(0);
    expect(at - signalledAt).toBeLessThan(2_000);
    for (const connection of [idle, silent, halfHead]) expect(connection.closedAt()).toBeDefined();
    expect(platform.stderr()).toBe('');
  });
});

describe('start-up failures are one line', () => {
  test('a port already in use names the address and its variable (api and platform)', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    try {
      const [api, platform] = await Promise.all([spawnBin('api', { PORT: String(port) }), spawnBin('platform', { PLATFORM_PORT: String(port) })]);
      expect((await api.exited).code).toBe(1);
      expect(api.stderr()).toBe(`api failed to start: port 127.0.0.1:${port} is already in use (PORT)\n`);
      expect((await platform.exited).code).toBe(1);
      expect(platform.stderr()).toBe(`platform failed to start: port 127.0.0.1:${port} is already in use (PLATFORM_PORT)\n`);
    } finally {
      holder.close();
    }
  });

  test('a database that cannot be reached is named by DATABASE_URL, never with its password', async () => {
    const port = await freePort(); // nothing listens there
    const api = await spawnBin('api', { PORT: String(await freePort()), DATABASE_URL: `postgres://gateway:Sup3r-s3cret@127.0.0.1:${port}/gateway_test` });
    expect((await api.exited).code).toBe(1);
    expect(api.stderr()).toBe(`api failed to start: cannot connect to the database at DATABASE_URL (postgres://gateway@127.0.0.1:${port}/gateway_test): connect ECONNREFUSED 127.0.0.1:${port}\n`);
    expect(api.stdout() + api.stderr()).not.toContain('Sup3r-s3cret');
  });
});
