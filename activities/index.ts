import type { Deps } from '../src/deps';

/**
 * All activities, built from injected dependencies. Workflows import only the type.
 */
export function createActivities(deps: Deps) {
  return {
    /** Round-trips through Postgres so a health check proves the worker's I/O works. */
    async ping(message: string): Promise<string> {
      const { rows } = await deps.db.query<{ echo: string }>('SELECT $1::text AS echo', [message]);
      return `pong: ${rows[0]!.echo}`;
    },
  };
}

export type Activities = ReturnType<typeof createActivities>;
