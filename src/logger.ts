import pino, { type Logger, type DestinationStream } from 'pino';

export type { Logger };

/**
 * Structured JSON logs. Credentials never reach a log line: the paths below are
 * censored wherever they appear, and request bodies are never logged.
 */
export const REDACTED_PATHS = [
  'authorization',
  '*.authorization',
  'headers.authorization',
  'headers["x-api-key"]',
  '*.headers.authorization',
  '*.headers["x-api-key"]',
  'key',
  'secret',
  'token',
  'password',
  '*.key',
  '*.secret',
  '*.token',
  '*.password',
];

export function createLogger(options: { level?: string; name?: string; destination?: DestinationStream } = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      name: options.name,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    options.destination,
  );
}
