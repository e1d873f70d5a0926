import type { Server } from 'node:http';
import type { Logger } from '../logger';
import { ConfigError } from '../config';
import { decodeURIComponentOr } from '../domain/fields';
import { databaseUnavailable } from '../store/db-errors';

/**
 * Shutdown timing of the HTTP processes (api, platform api). On SIGTERM/SIGINT requests in
 * flight have SHUTDOWN_DRAIN_MS to finish; those still running then are ended through their
 * failure path (src/net/graceful-close.ts), which leaves the rest of SHUTDOWN_GRACE_MS to
 * write the usage they are billed for and close the pools. Past SHUTDOWN_GRACE_MS the process
 * exits 1 whatever is still running (orchestrators wait 30 s before SIGKILL by default).
 */
export const SHUTDOWN_DRAIN_MS = 20_000;
export const SHUTDOWN_GRACE_MS = 25_000;

/** A start-up failure whose message says it all: printed as one line, without a stack. */
export class StartupError extends Error {}

/** Runs a process entry point; a configuration error or start-up failure exits non-zero with a message. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const message =
      error instanceof ConfigError
        ? error.message
        : error instanceof StartupError
          ? `${name} failed to start: ${error.message}`
          : `${name} failed to start: ${(error as Error)?.stack ?? error}`;
    process.stderr.write(`${message}\n`);
    process.exit(1);
  });
}

/**
 * Graceful shutdown on SIGTERM/SIGINT: exits 0 once `stop` has resolved, 1 when it failed or
 * had not resolved within `graceMs`; a second signal exits 1 at once. Returns the removal of
 * the signal handlers (tests).
 */
export function shutdownOn(logger: Logger, stop: () => Promise<void>, graceMs = SHUTDOWN_GRACE_MS, exit: (code: number) => void = (code) => process.exit(code)): () => void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) return exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error({ grace_ms: graceMs }, 'shutdown did not complete in time; exiting');
      exit(1);
    }, graceMs);
    force.unref();
    stop().then(
      () => {
        clearTimeout(force);
        exit(0);
      },
      (error) => {
        clearTimeout(force);
        logger.error({ err: error }, 'shutdown failed');
        exit(1);
      },
    );
  };
  const onTerm = () => handler('SIGTERM');
  const onInt = () => handler('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  return () => {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
  };
}

/** Listens on host:port; an address that cannot be taken is a one-line start-up failure naming its variable. */
export function listen(server: Server, port: number, host: string, variable: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const failed = (error: NodeJS.ErrnoException) => {
      const where = `${host}:${port}`;
      if (error.code === 'EADDRINUSE') reject(new StartupError(`port ${where} is already in use (${variable})`));
      else if (error.code === 'EACCES') reject(new StartupError(`port ${where} may not be used by this user (${variable})`));
      else if (error.code === 'EADDRNOTAVAIL') reject(new StartupError(`${host} is not an address of this machine (HOST)`));
      else reject(error);
    };
    server.once('error', failed);
    server.listen(port, host, () => {
      server.off('error', failed);
      resolve();
    });
  });
}

/**
 * The first statement against the database (the migrations): a database that cannot be reached
 * or refuses the connection is a one-line start-up failure naming DATABASE_URL, shown without
 * its password. Other failures (a migration's own error) are left as they are.
 */
export async function firstDatabaseContact<T>(databaseUrl: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (!connectionFailure(error)) throw error;
    throw new StartupError(`cannot connect to the database at DATABASE_URL (${withoutSecrets(databaseUrl)}): ${hidePassword(failureText(error), databaseUrl)}`);
  }
}

/**
 * Why no session could be had: Postgres unreachable (db-errors.ts: refused, timed out,
 * terminated), a host name that does not resolve, or Postgres refusing the session (SQLSTATE
 * 28 authorization, 3D000 no such database, 53300 too many connections). Not a file error of
 * the migrations (ENOENT) or anything else.
 */
function connectionFailure(error: unknown): boolean {
  const { code, errors } = (error ?? {}) as { code?: unknown; errors?: unknown };
  if (Array.isArray(errors) && errors.some(connectionFailure)) return true;
  if (typeof code === 'string' && (code === 'ENOTFOUND' || /^28/.test(code) || ['3D000', '53300'].includes(code))) return true;
  return databaseUnavailable(error);
}

/** The error's message; one of several attempts (localhost as ::1 and 127.0.0.1) has an empty one of its own. */
function failureText(error: unknown): string {
  // (Read by shape: errors of Node's own modules may come from another realm than this code's.)
  const { message, errors } = (error ?? {}) as { message?: unknown; errors?: unknown };
  if (!message && Array.isArray(errors) && errors.length > 0) return errors.map(failureText).join('; ');
  return typeof message === 'string' ? message : String(error);
}

/** The URL as scheme://user@host:port/database: no password, nor query parameters (which may carry one). */
function withoutSecrets(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    const user = url.username ? `${url.username}@` : '';
    return `${url.protocol}//${user}${url.host}${url.pathname}`;
  } catch {
    return 'not a URL';
  }
}

/** A driver message never quotes the password, but should one ever: it is masked. */
function hidePassword(text: string, databaseUrl: string): string {
  const secrets = new Set<string>();
  try {
    const url = new URL(databaseUrl);
    // The URL's password, and any query parameter that carries one (`?password=`, `sslpassword`).
    const found = [url.password, ...[...url.searchParams].filter(([name]) => /password/i.test(name)).map(([, value]) => value)];
    for (const secret of found.filter(Boolean)) secrets.add(secret).add(decodeURIComponentOr(secret));
  } catch {
    // not a URL: nothing to find in it
  }
  let masked = text;
  for (const secret of secrets) masked = masked.split(secret).join('***');
  return masked;
}
