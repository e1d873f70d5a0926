import type { Logger } from '../logger';
import { ConfigError } from '../config';

/** Runs a process entry point; a configuration error or start-up failure exits non-zero with a message. */
export function runMain(name: string, main: () => Promise<void>): void {
  main().catch((error: unknown) => {
    const message = error instanceof ConfigError ? error.message : `${name} failed to start: ${(error as Error)?.stack ?? error}`;
    process.stderr.write(`${message}\n`);
    process.exit(1);
  });
}

/** Graceful shutdown on SIGTERM/SIGINT; a second signal exits at once. */
export function shutdownOn(logger: Logger, stop: () => Promise<void>, graceMs = 25_000): void {
  let stopping = false;
  const handler = (signal: string) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop().then(
      () => process.exit(0),
      (error) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => handler('SIGTERM'));
  process.on('SIGINT', () => handler('SIGINT'));
}
