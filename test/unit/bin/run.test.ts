import { createServer } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { Pool } from 'pg';
import { firstDatabaseContact, listen, shutdownOn, StartupError } from '../../../src/bin/run';
import { createLogger } from '../../../src/logger';

const quietLogger = () =>
  createLogger({
    destination: new Writable({
      write: (_chunk, _encoding, callback) => callback(),
    }),
  });

describe('shutdownOn', () => {
  // The test process's own signal handlers are set aside while these emit signals.
  const saved = { SIGTERM: process.listeners('SIGTERM'), SIGINT: process.listeners('SIGINT') };
  let dispose: (() => void) | undefined;
  beforeEach(() => {
    process.removeAllListeners('SIGTERM');
    process.removeAllListeners('SIGINT');
  });
  afterEach(() => {
    dispose?.();
    for (const [signal, listeners] of Object.entries(saved)) for (const listener of listeners) process.on(signal, listener as () => void);
  });

  test('exits 0 once stop has resolved, after what stop does in order (drain, then flush)', async () => {
    const order: string[] = [];
    const exited = new Promise<number>((resolve) => {
      dispose = shutdownOn(
        quietLogger(),
        async () => {
          order.push('drained');
          await new Promise((done) => setTimeout(done, 30));
          order.push('flushed');
        },
        1_000,
        (code) => {
          order.push(`exit ${code}`);
          resolve(code);
        },
      );
    });
    process.emit('SIGTERM');
    expect(await exited).toBe(0);
    expect(order).toEqual(['drained', 'flushed', 'exit 0']);
  });

  test('exits 1 when stop has not resolved within the grace period, or failed', async () => {
    const late = new Promise<number>((resolve) => {
      dispose = shutdownOn(quietLogger(), () => new Promise(() => undefined), 50, resolve);
    });
    process.emit('SIGINT');
    expect(await late).toBe(1);
    dispose!();
    const failed = new Promise<number>((resolve) => {
      dispose = shutdownOn(quietLogger(), () => Promise.reject(new Error('pool would not end')), 1_000, resolve);
    });
    process.emit('SIGTERM');
    expect(await failed).toBe(1);
  });

  test('a second signal exits 1 at once', () => {
    const codes: number[] = [];
    dispose = shutdownOn(quietLogger(), () => new Promise(() => undefined), 10_000, (code) => codes.push(code));
    process.emit('SIGTERM');
    expect(codes).toEqual([]);
    process.emit('SIGINT');
    expect(codes).toEqual([1]);
  });
});

describe('start-up failures', () => {
  test('a port already in use is one line naming the address and its variable', async () => {
    const holder = createTcpServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    const { port } = holder.address() as AddressInfo;
    const server = createServer();
    try {
      const failure = listen(server, port, '127.0.0.1', 'PLATFORM_PORT');
      await expect(failure).rejects.toBeInstanceOf(StartupError);
      await expect(failure).rejects.toThrow(`port 127.0.0.1:${port} is already in use (PLATFORM_PORT)`);
    } finally {
      holder.close();
    }
  });

  test('a database that cannot be reached is named by DATABASE_URL, without its password', async () => {
    const closed = createTcpServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const { port } = closed.address() as AddressInfo;
    await new Promise<void>((resolve) => closed.close(() => resolve())); // nothing listens there now
    const url = `postgres://gateway:pa%24%24-word-7@127.0.0.1:${port}/gateway_test?sslpassword=other-secret-9`;
    const pool = new Pool({ connectionString: url });
    try {
      const failure = firstDatabaseContact(url, () => pool.query('SELECT 1'));
      await expect(failure).rejects.toBeInstanceOf(StartupError);
      const message = await failure.catch((error: Error) => error.message);
      expect(message).toBe(`cannot connect to the database at DATABASE_URL (postgres://gateway@127.0.0.1:${port}/gateway_test): connect ECONNREFUSED 127.0.0.1:${port}`);
    } finally {
      await pool.end();
    }
    // Attempts on several addresses (localhost as ::1 and 127.0.0.1) fail as one AggregateError without a message.
    const both = new AggregateError([Object.assign(new Error('connect ECONNREFUSED ::1:5432'), { code: 'ECONNREFUSED' }), Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432 for pa$$-word-7'), { code: 'ECONNREFUSED' })], '');
    const message = await firstDatabaseContact('postgres://gateway:pa%24%24-word-7@localhost/gateway', () => Promise.reject(both)).catch((error: Error) => error.message);
    expect(message).toBe('cannot connect to the database at DATABASE_URL (postgres://gateway@localhost/gateway): connect ECONNREFUSED ::1:5432; connect ECONNREFUSED 127.0.0.1:5432 for ***');
    // A Postgres that takes the connection and never answers: pg's own connect timeout.
    const silent = await firstDatabaseContact('postgres://gateway:pw-9@db/gateway', () => Promise.reject(new Error('timeout expired'))).catch((error: Error) => error);
    expect(silent).toBeInstanceOf(StartupError);
    expect(silent.message).toBe('cannot connect to the database at DATABASE_URL (postgres://gateway@db/gateway): timeout expired');
  });

  test('a failure that is not about reaching the database is left as it is', async () => {
    const migrationBug = Object.assign(new Error('relation "nope" does not exist'), { code: '42P01' });
    await expect(firstDatabaseContact('postgres://gateway:secret@127.0.0.1/gateway', () => Promise.reject(migrationBug))).rejects.toBe(migrationBug);
    // (Nor a file of the migrations missing: a system error code, but no network one.)
    const missing = Object.assign(new Error("ENOENT: no such file or directory, scandir 'migrations'"), { code: 'ENOENT' });
    await expect(firstDatabaseContact('postgres://gateway:secret@127.0.0.1/gateway', () => Promise.reject(missing))).rejects.toBe(missing);
  });
});
