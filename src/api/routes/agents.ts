import { isDeepStrictEqual } from 'node:util';
import Router from '@koa/router';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { requireProjectAccess, requireResourceProject } from '../../auth/tenancy';
import { knowledgeBaseCollections, type ToolEntry } from '../../domain/agent-tool-entries';
import { acceptedReasoningEfforts, agentFieldsFromCreate, AgentCreateSchema, AgentListQuerySchema, AgentPatchSchema, applyAgentPatch, modelRuleError } from '../../domain/agents';
import { decodeCursor, encodeCursor } from '../../domain/cursor';
import { agentFieldsOf, findAgent, insertAgent, listAgents, lockAgent, presentAgent, softDeleteAgent, updateAgent } from '../../store/agents';
import { findCollection } from '../../store/collections';
import { clearReasoningEffortsNotIn } from '../../store/sessions';
import { withTransaction, type Queryable } from '../../store/db';
import { newId } from '../../store/ids';
import { badRequest } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput, pathIds, ResourceIdSchema } from '../validate';
import { checkIfMatch, etagOf } from './if-match';

/**
 * Every `knowledge_base` entry must name a collection of the agent's project; the first one
 * that does not is a 400 naming `tools.N.collection_id`. A collection of another project
 * reads exactly like an absent one, so the message reveals nothing about other projects.
 * Checked when the agent is written; a collection deleted later is the runtime's concern.
 */
async function requireCollections(db: Queryable, projectId: string, tools: readonly ToolEntry[] | null): Promise<void> {
  for (const { index, collectionId } of knowledgeBaseCollections(tools)) {
    if (!(await findCollection(db, projectId, collectionId))) {
      const param = `tools.${index}.collection_id`;
      throw badRequest(`${param}: no knowledge-base collection '${collectionId}' in project '${projectId}'`, param);
    }
  }
}

/**
 * Agents: create, read, list, update (PATCH with optional If-Match), delete (soft).
 * Callers: API keys pinned to the agent's project, or site service tokens of its account.
 * An agent of another project answers 404 exactly like an absent one.
 */
export function agentsRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  const guard = [rateLimit(deps), authenticate(deps, { scope: 'agents' }), pathIds({ agent_id: { schema: ResourceIdSchema, what: 'agent' } })];
  const body = jsonBody(deps.config.BODY_LIMIT_BYTES);

  router.post('/v1/agents', ...guard, body, async (ctx) => {
    const input = parseInput(AgentCreateSchema, ctx.request.body);
    await requireProjectAccess(deps.db, ctx.state.principal!, input.project_id);
    const fields = agentFieldsFromCreate(input);
    const error = modelRuleError(fields);
    if (error) throw badRequest(error.message, error.param);
    await requireCollections(deps.db, fields.project_id, fields.tools);
    const row = await insertAgent(deps.db, newId('agent'), fields);
    ctx.status = 201;
    ctx.set('ETag', etagOf(row.version));
    ctx.body = presentAgent(row);
  });

  router.get('/v1/agents', ...guard, async (ctx) => {
    const query = parseInput(AgentListQuerySchema, ctx.query, 'query');
    await requireProjectAccess(deps.db, ctx.state.principal!, query.project_id);
    const list = `agents:${query.project_id}`;
    const cursor = query.page === undefined ? undefined : decodeCursor(query.page, list);
    if (query.page !== undefined && !cursor) throw badRequest('page: not a cursor returned by this listing', 'page');
    const rows = await listAgents(deps.db, query.project_id, query.limit + 1, cursor && { at: cursor.at, id: cursor.key });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    ctx.body = {
      data: page.map(presentAgent),
      next_page: rows.length > query.limit && last ? encodeCursor({ list, at: last.cursor_at, key: last.id }) : null,
    };
  });

  router.get('/v1/agents/:agent_id', ...guard, async (ctx) => {
    const row = await findAgent(deps.db, ctx.params.agent_id!);
    await requireResourceProject(deps.db, ctx.state.principal!, row?.project_id, 'agent');
    ctx.set('ETag', etagOf(row!.version));
    ctx.body = presentAgent(row!);
  });

  router.patch('/v1/agents/:agent_id', ...guard, body, async (ctx) => {
    const patch = parseInput(AgentPatchSchema, ctx.request.body);
    const principal = ctx.state.principal!;
    const row = await withTransaction(deps.db, async (client) => {
      const current = await lockAgent(client, ctx.params.agent_id!);
      await requireResourceProject(client, principal, current?.project_id, 'agent');
      checkIfMatch(ctx, current!.version);
      const before = agentFieldsOf(current!);
      const result = applyAgentPatch(before, patch);
      if ('error' in result) throw badRequest(result.error.message, result.error.param);
      const moved = result.fields.project_id !== current!.project_id;
      if (moved) await requireProjectAccess(client, principal, result.fields.project_id);
      // New tools are checked against the (possibly new) project; a move re-checks the kept tools.
      if (patch.tools !== undefined || moved) await requireCollections(client, result.fields.project_id, result.fields.tools);
      // A valid patch that changes nothing (an empty body, values as they are) is no new version:
      // other clients' If-Match values and sessions bound to this version stay valid.
      if (isDeepStrictEqual(result.fields, before)) return current!;
      if (result.fields.model !== before.model) await clearReasoningEffortsNotIn(client, current!.id, acceptedReasoningEfforts(result.fields.model));
      return updateAgent(client, current!.id, result.fields, current!.project_id);
    });
    ctx.set('ETag', etagOf(row.version));
    ctx.body = presentAgent(row);
  });

  router.delete('/v1/agents/:agent_id', ...guard, async (ctx) => {
    const principal = ctx.state.principal!;
    await withTransaction(deps.db, async (client) => {
      const current = await lockAgent(client, ctx.params.agent_id!);
      await requireResourceProject(client, principal, current?.project_id, 'agent');
      checkIfMatch(ctx, current!.version);
      await softDeleteAgent(client, current!.id);
    });
    ctx.status = 204;
  });

  return router;
}
