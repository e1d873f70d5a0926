import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import type { Config } from '../src/config';
import { createPool } from '../src/store/db';
import { migrate } from '../src/store/migrate';
import { createAccount, createProject } from '../src/store/accounts';
import { issueApiKey } from '../src/auth/provisioning';
import { grantCredits, NANO_PER_CREDIT } from '../src/billing/credits';

/** What the benchmarks share: ports, child processes of our own entry points, a funded tenant. */
export const ROOT = path.resolve(__dirname, '..');

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const port = (server.address() as { port: number }).port;
      server.close(() => resolve(port));
    });
  });

// Children still running when the benchmark exits, however it exits (a crash included), are stopped.
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGTERM');
});

// Extra node flags for the children, e.g. BENCH_NODE_FLAGS='--cpu-prof --cpu-prof-dir=/tmp/prof' to profile them.
const CHILD_NODE_FLAGS = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);

/** Runs one of src/bin/*.ts as its own process (as in production), stderr passed through. */
export function startProcess(script: string, env: Record<string, string>, stdout: 'ignore' | 'pipe' | 'inherit' = 'ignore'): ChildProcess {
  const child = spawn(process.execPath, [...CHILD_NODE_FLAGS, '--import', 'tsx', script], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', stdout, 'inherit'] });
  running.add(child);
  child.once('exit', () => running.delete(child));
  return child;
}

/** Polls `url` until it answers 2xx (about 30 s at most). */
export async function waitFor(url: string, attempts = 300): Promise<void> {
  for (let i = 0; i < attempts; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${url} did not come up`);
}

/** A fresh account and project with a million credits, and an `all` key. */
export async function benchTenant(config: Config, name: string): Promise<{ projectId: string; key: string }> {
  const db = createPool(config.DATABASE_URL, 2);
  try {
    await migrate(db);
    const account = await createAccount(db, name);
    const project = await createProject(db, account.id, name);
    await grantCredits(db, project.id, 1_000_000n * NANO_PER_CREDIT, 'bench');
    const key = (await issueApiKey(db, { projectId: project.id, preset: 'all' })).key;
    return { projectId: project.id, key };
  } finally {
    await db.end();
  }
}

/** utime + stime of a process, in milliseconds (0 once it is gone). */
export const processCpuMs = (pid: number): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
};

/** Pids of every process a user runs (Postgres forks a backend per connection). */
export function pidsOfUser(user: string): number[] {
  const uid = Number(readFileSync('/etc/passwd', 'utf8').split('\n').find((line) => line.startsWith(`${user}:`))?.split(':')[2] ?? NaN);
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map(Number)
    .filter((pid) => {
      try {
        return statSync(`/proc/${pid}`).uid === uid;
      } catch {
        return false;
      }
    });
}
