import type { Deps } from '../src/deps';
import { createProviderRegistry } from '../src/providers';
import { createRunCycleActivities } from './run-cycle';
import { createCallModelActivities } from './call-model';
import { createCompactActivities } from './compact';
import { createServerToolActivities } from './server-tools';
import { createKnowledgeBaseTool } from './knowledge-base-tools';

/**
 * All activities, built from injected dependencies. Workflows import only the type.
 */
export function createActivities(deps: Deps) {
  const providers = createProviderRegistry(deps.config);
  return {
    /** Round-trips through Postgres so a health check proves the worker's I/O works. */
    async ping(message: string): Promise<string> {
      const { rows } = await deps.db.query<{ echo: string }>('SELECT $1::text AS echo', [message]);
      return `pong: ${rows[0]!.echo}`;
    },
    ...createRunCycleActivities(deps),
    ...createCallModelActivities(deps, providers),
    ...createCompactActivities(deps, providers),
    ...createServerToolActivities(deps, { knowledgeBase: createKnowledgeBaseTool(deps) }),
  };
}

export type Activities = ReturnType<typeof createActivities>;
