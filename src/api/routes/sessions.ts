import Router from '@koa/router';
import type { Deps } from '../../deps';
import { authenticate } from '../../auth/middleware';
import { requireProjectAccess, requireResourceProject } from '../../auth/tenancy';
import { reasoningEffortError } from '../../domain/agents';
import { decodeCursor, encodeCursor } from '../../domain/cursor';
import { applySessionPatch, SessionCreateSchema, SessionListQuerySchema, SessionPatchSchema } from '../../domain/sessions';
import { findAgentsByIds, lockAgentShared } from '../../store/agents';
import { withTransaction } from '../../store/db';
import { lockSession } from '../../store/events';
import { newId } from '../../store/ids';
import { archiveSession, insertSession, listSessions, lockSessionRow, markWorkflowEnded, presentSession, softDeleteSession, unarchiveSession, updateSessionFields, type SessionRow } from '../../store/sessions';
import { signalSession, signalSessionDeleted, signalTitleChanged } from '../../temporal/session-signals';
import { badRequest, conflict, notFound } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput, pathIds, ResourceIdSchema } from '../validate';
import { loadAccessibleSession } from './session-access';

/**
 * Sessions: create (bound to an agent, inheriting its project), read with the resolved
 * agent, list (keyset pages, newest first), update title and metadata, archive and
 * unarchive, delete (soft).
 */
export function sessionsRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  const guard = [rateLimit(deps), authenticate(deps, { scope: 'sessions' }), pathIds({ session_id: { schema: ResourceIdSchema, what: 'session' } })];
  const body = jsonBody(deps.config.BODY_LIMIT_BYTES);

  const present = async (session: SessionRow) => {
    const agents = await findAgentsByIds(deps.db, [session.agent_id]);
    return presentSession(session, agents.get(session.agent_id)!);
  };

  router.post('/v1/sessions', ...guard, body, async (ctx) => {
    const input = parseInput(SessionCreateSchema, ctx.request.body);
    const principal = ctx.state.principal!;
    // Checked and inserted under the agent's share lock: a PATCH, move or delete of the agent
    // waits, so the session gets the project, version and model it was validated against.
    const { row, agent } = await withTransaction(deps.db, async (client) => {
      const agent = await lockAgentShared(client, input.agent.id);
      // (An absent agent pays the same project lookup as another project's: no timing hint either.)
      await requireResourceProject(client, principal, agent?.project_id, 'agent');
      if (!agent) throw notFound('agent');
      if (input.agent.version !== undefined && input.agent.version !== agent.version) {
        throw conflict(`agent.version ${input.agent.version} is not the agent's current version ${agent.version}`);
      }
      const effort = input.reasoning_effort || null;
      if (effort) {
        const error = reasoningEffortError(agent.model, effort);
        if (error) throw badRequest(`reasoning_effort: ${error}`, 'reasoning_effort');
      }
      const row = await insertSession(client, {
        id: newId('sesn'),
        projectId: agent.project_id,
        agentId: agent.id,
        title: input.title ?? null,
        reasoningEffort: effort,
        metadata: input.metadata ?? {},
        ownerId: input.owner_id ?? null,
        clientId: principal.clientId ?? null,
      });
      if (!row) throw notFound('agent');
      return { row, agent };
    });
    ctx.status = 201;
    ctx.body = presentSession(row, agent);
  });

  router.get('/v1/sessions', ...guard, async (ctx) => {
    const query = parseInput(SessionListQuerySchema, ctx.query, 'query');
    await requireProjectAccess(deps.db, ctx.state.principal!, query.project_id);
    const list = `sessions:${query.project_id}`;
    const cursor = query.page === undefined ? undefined : decodeCursor(query.page, list);
    if (query.page !== undefined && !cursor) throw badRequest('page: not a cursor returned by this listing', 'page');
    const rows = await listSessions(
      deps.db,
      {
        projectId: query.project_id,
        agentId: query.agent_id,
        metadata: query.metadata_key !== undefined ? { key: query.metadata_key, value: query.metadata_value! } : undefined,
        includeArchived: query.include_archived,
      },
      query.limit + 1,
      cursor && { at: cursor.at, id: cursor.key },
    );
    const page = rows.slice(0, query.limit);
    const agents = await findAgentsByIds(deps.db, page.map((row) => row.agent_id));
    const last = page[page.length - 1];
    ctx.body = {
      data: page.map((row) => presentSession(row, agents.get(row.agent_id)!)),
      next_page: rows.length > query.limit && last ? encodeCursor({ list, at: last.cursor_at, key: last.id }) : null,
    };
  });

  router.get('/v1/sessions/:session_id', ...guard, async (ctx) => {
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    ctx.body = await present(session);
  });

  // PATCH: title and metadata only (owner_id is immutable). Concurrent patches serialize on
  // the row lock, so no metadata key patch is lost.
  router.patch('/v1/sessions/:session_id', ...guard, body, async (ctx) => {
    const patch = parseInput(SessionPatchSchema, ctx.request.body);
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    if (patch.title === undefined && patch.metadata === undefined) {
      ctx.body = await present(session);
      return;
    }
    const row = await withTransaction(deps.db, async (client) => {
      const current = await lockSessionRow(client, session.id);
      // Deleted since the access check: gone. Moved to another project with its agent: the
      // caller's access is checked again against that project (an account-wide credential keeps it).
      if (!current) throw notFound('session');
      if (current.project_id !== session.project_id) await requireResourceProject(client, ctx.state.principal!, current.project_id, 'session');
      const result = applySessionPatch(current, patch);
      if ('error' in result) throw badRequest(result.error.message, result.error.param);
      const updated = await updateSessionFields(client, current.id, result.fields);
      // The workflow's memo follows the title. Signalled under the row lock, so concurrent
      // renames signal in the order they commit and the last one wins in the memo too (the
      // PATCH is done either way).
      if (patch.title !== undefined && updated.title !== current.title) {
        await signalTitleChanged(deps, updated).catch((error) => ctx.state.log.warn({ err: error, session_id: updated.id }, 'session title signal failed'));
      }
      return updated;
    });
    ctx.body = await present(row);
  });

  router.post('/v1/sessions/:session_id/archive', ...guard, async (ctx) => {
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    const archived = await archiveSession(deps.db, session.id);
    if (!archived) throw notFound('session');
    ctx.body = await present(archived);
  });

  router.post('/v1/sessions/:session_id/unarchive', ...guard, async (ctx) => {
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    const unarchived = await unarchiveSession(deps.db, session.id);
    if (!unarchived) throw notFound('session');
    ctx.body = await present(unarchived);
  });

  router.delete('/v1/sessions/:session_id', ...guard, async (ctx) => {
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    const runId = await withTransaction(deps.db, async (client) => {
      const locked = await lockSession(client, session.id);
      // A concurrent delete committed first: this one finds nothing to delete, as after it.
      if (!locked || !(await softDeleteSession(client, session.id))) throw notFound('session');
      return locked.active_run_id;
    });
    // A run in flight is asked to stop (if the signal fails it ends on its own timer); an idle
    // workflow is woken. Either way its next claim finds the session deleted, and it ends.
    // A lost signal is sent again by the worker's reconciler (sessions.workflow_ended_at).
    try {
      if (runId) await signalSession(deps, session, 'interrupt', runId);
      else if ((await signalSessionDeleted(deps, session.id)) === 'no_workflow') await markWorkflowEnded(deps.db, session.id);
    } catch (error) {
      ctx.state.log.warn({ err: error, session_id: session.id }, 'could not signal the workflow of a deleted session; left for the reconciler');
    }
    ctx.status = 204;
  });

  return router;
}
