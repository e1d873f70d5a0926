import Router from '@koa/router';
import type { Deps } from '../../deps';
import { authenticate, type CredentialKind } from '../../auth/middleware';
import { assertCredits } from '../../billing/credits';
import { decodeCursor, encodeCursor } from '../../domain/cursor';
import { EventListQuerySchema, planEvents, PostEventsSchema } from '../../domain/events';
import { withTransaction } from '../../store/db';
import { findEventPosition, listEvents } from '../../store/event-queries';
import { appendEvents, lockSessionWithAgent, presentEvent } from '../../store/events';
import { newId } from '../../store/ids';
import { isAsyncExecutionEnabled, saveRunState } from '../../store/sessions';
import { signalSession } from '../../temporal/session-signals';
import { ApiError, badRequest, forbidden, notFound } from '../errors';
import { jsonBody } from '../middleware/json-body';
import { rateLimit } from '../middleware/rate-limit';
import type { AppContext, AppState } from '../types';
import { parseInput, pathIds, ResourceIdSchema } from '../validate';
import { loadAccessibleSession } from './session-access';

/** Event routes also accept browser session tokens bound to the session's agent (and visitor). */
export const EVENT_CREDENTIALS: CredentialKind[] = ['api_key', 'service_token', 'browser_session'];

/**
 * The session event log over HTTP. POST applies the run-behaviour rules in one
 * transaction holding the session row lock, commits, and only then wakes the session's
 * workflow: a failed signal leaves the events unprocessed for the worker's reconciler,
 * never lost and never run twice.
 */
export function eventsRouter(deps: Deps): Router<AppState, AppContext> {
  const router = new Router<AppState, AppContext>();
  const guard = [rateLimit(deps), authenticate(deps, { scope: 'sessions', accept: EVENT_CREDENTIALS }), pathIds({ session_id: { schema: ResourceIdSchema, what: 'session' } })];

  router.post('/v1/sessions/:session_id/events', ...guard, jsonBody(deps.config.BODY_LIMIT_BYTES), async (ctx) => {
    const input = parseInput(PostEventsSchema, ctx.request.body);
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    // A browser session token speaks for a visitor: it may talk to the agent, not instruct it
    // with system-role messages (those come from the integration's own key).
    if (ctx.state.principal!.method === 'browser_session' && input.events.some((event) => event.type === 'system.message')) {
      throw forbidden('browser session tokens may not send system.message events');
    }
    const asyncEnabled = await isAsyncExecutionEnabled(deps.db, session);
    const runStarting = input.events.some((event) => event.type === 'user.message' || event.type === 'user.tool_result');
    if (runStarting && asyncEnabled) await assertCredits(deps.db, session.project_id);

    const { plan, appended } = await withTransaction(deps.db, async (client) => {
      const locked = await lockSessionWithAgent(client, session.id);
      if (!locked || locked.deleted_at) throw notFound('session');
      const plan = planEvents(locked, input.events, { newRunId: newId('run'), asyncEnabled });
      if (!plan.ok) throw plan.status === 409 ? new ApiError(409, 'conflict_error', plan.message) : badRequest(plan.message, 'events');
      // A deleted agent starts no new runs (checked after the spec's own rules, which come first);
      // its sessions stay readable, and a run it already started (a pause included) may finish.
      if (locked.agent?.deleted && input.events.some((event) => event.type === 'user.message')) {
        throw new ApiError(409, 'conflict_error', "the session's agent was deleted: it starts no new runs");
      }
      const appended = await appendEvents(client, session.id, plan.append);
      await saveRunState(client, session.id, plan.state, plan.startedRunId !== undefined);
      return { plan, appended };
    });

    if (plan.signal) {
      const signal = plan.signal;
      try {
        await signalSession(deps, session, signal.kind, signal.kind === 'interrupt' ? signal.runId : undefined);
      } catch (error) {
        // Committed events are safe: the worker's reconciler re-signals sessions with unprocessed events.
        ctx.state.log.warn({ err: error, session_id: session.id, signal: signal.kind }, 'session signal failed after commit; left for the reconciler');
      }
    }
    // The caller's own events, with their ids (synthetic cancellations come first and show in the log).
    ctx.body = { data: appended.slice(appended.length - input.events.length).map((row) => presentEvent(row)) };
  });

  router.get('/v1/sessions/:session_id/events', ...guard, async (ctx) => {
    const query = parseInput(EventListQuerySchema, ctx.query, 'query');
    const session = await loadAccessibleSession(deps, ctx.state.principal!, ctx.params.session_id!);
    const list = `events:${session.id}:${query.order}`;
    let after: { at: string; seq: string } | undefined;
    if (query.page !== undefined) {
      const cursor = decodeCursor(query.page, list);
      // The key is the event's sequence number (a bigint in the query).
      if (!cursor || !/^[0-9]{1,18}$/.test(cursor.key)) throw badRequest('page: not a cursor returned by this listing (same session and order)', 'page');
      after = { at: cursor.at, seq: cursor.key };
    } else if (query.after_id !== undefined) {
      after = await findEventPosition(deps.db, session.id, query.after_id);
      if (!after) throw badRequest(`after_id: '${query.after_id}' is not an event of this session`, 'after_id');
    }
    const rows = await listEvents(deps.db, session.id, { order: query.order, limit: query.limit + 1, after, includeThinking: query.include_thinking });
    const page = rows.slice(0, query.limit);
    const last = page[page.length - 1];
    ctx.body = {
      data: page.map((row) => presentEvent(row, { includeThinking: query.include_thinking })),
      next_page: rows.length > query.limit && last ? encodeCursor({ list, at: last.cursor_at, key: last.seq }) : null,
    };
  });

  return router;
}
