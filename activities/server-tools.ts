import { randomInt } from 'node:crypto';
import { storable } from '../src/domain/storable-text';
import type { Deps } from '../src/deps';
import { isDevelopment } from '../src/config';
import { roleOf, searchDeferredTools, toolErrorEnvelope, validateToolInput } from '../src/domain/run-tools';
import { withTransaction } from '../src/store/db';
import { appendEvents, lockSession } from '../src/store/events';
import { assertRunHoldsSession, assertRunMayStep, buildConversation, loadRunContext } from './run-context';
import { heartbeating } from './heartbeat';

// node's randomInt(min, max + 1) draws from spans below 2^48, with a safe-integer bound.
const RANDOM_SPAN_MAX = 2 ** 48 - 2; // the largest max - min randomInt(min, max + 1) accepts

export interface ToolAnswer {
  content: string;
  is_error?: boolean;
  error_code?: string;
  status?: 'tool_loaded';
  /** Citation data of knowledge-base results, kept for the answer that uses them. */
  citations?: Array<{ type: string; document_uri: string; document_title: string }>;
}

/**
 * Tools the gateway answers itself. Each answer is appended as a processed
 * `user.tool_result` (idempotent by the call id), which the next turn reads.
 */
export function createServerToolActivities(deps: Deps, extra: { knowledgeBase?: (call: KnowledgeBaseCall) => Promise<ToolAnswer> } = {}) {
  return {
    async runServerTool(input: { sessionId: string; runId: string; call: { id: string; name: string; input: Record<string, unknown> } }): Promise<void> {
      const context = await loadRunContext(deps.db, input.sessionId);
      assertRunMayStep(context.session, input.runId);
      const tools = context.agent.tools ?? [];
      const role = roleOf(tools, input.call.name);
      const args = input.call.input;
      let answer: ToolAnswer;
      switch (role.kind) {
        case 'echo':
          // Returns its message unchanged, so only a string is one: anything else would be altered.
          answer = !isDevelopment(deps.config)
            ? unavailable(input.call.name)
            : typeof args.message === 'string'
              ? { content: args.message }
              : failure('invalid_input', 'message is required and must be a string', 'message', true);
          break;
        case 'random_number': {
          // JSON integers only: null, "3", true or [2] are not numbers the model meant.
          const min = Number.isSafeInteger(args.min) ? (args.min as number) : NaN;
          const max = Number.isSafeInteger(args.max) ? (args.max as number) : NaN;
          if (!Number.isSafeInteger(min) || !Number.isSafeInteger(max) || min > max) {
            answer = failure('invalid_input', 'min and max must be integers with min <= max', Number.isSafeInteger(min) ? 'max' : 'min', true);
          } else if (max - min > RANDOM_SPAN_MAX || max >= Number.MAX_SAFE_INTEGER) {
            answer = failure('invalid_input', 'max - min must be below 2^48 - 1, and max below 2^53 - 1', 'max', true);
          } else answer = isDevelopment(deps.config) ? { content: String(randomInt(min, max + 1)) } : unavailable(input.call.name);
          break;
        }
        case 'search_tools':
          answer = { content: JSON.stringify({ tools: searchDeferredTools(tools, String(args.query ?? '')) }) };
          break;
        case 'deferred': {
          // A loaded deferred tool reaches here only with a malformed input, or when one turn
          // named it twice before it was loaded: the second call is answered like the first, so
          // "loaded" is read as of the turn that made the call (the first call's tool_loaded
          // result, written since, does not count for its sibling).
          const calledAt = context.events.find((event) => event.type === 'agent.tool_use' && (event.content as Array<{ id?: string }>).some((block) => block.id === input.call.id));
          const before = calledAt ? context.events.filter((event) => Number(event.seq) < Number(calledAt.seq)) : context.events;
          const loaded = buildConversation({ ...context, events: before }).loadedTools.has(input.call.name);
          const problem = loaded ? validateToolInput(role.entry.input_schema ?? { type: 'object' }, args) : null;
          answer = problem
            ? failure('invalid_input', problem.message, problem.field, true)
            : { content: `Tool ${input.call.name} is now loaded; call it again with its input.`, status: 'tool_loaded' };
          break;
        }
        case 'kb_search':
        case 'kb_fetch':
          // settings.disable_kb_rag keeps the knowledge-base tools out of the model's list; a
          // call that names one anyway retrieves nothing either.
          if (context.agent.settings?.disable_kb_rag === true) answer = failure('tool_unavailable', 'knowledge-base retrieval is disabled for this agent', undefined, false);
          else answer = extra.knowledgeBase
            ? await heartbeating(() => extra.knowledgeBase!({ projectId: context.session.project_id, kind: role.kind, entry: role.entry, input: args }))
            : unavailable(input.call.name);
          break;
        case 'client':
          // The agent changed while the turn ran: the tool the model called as the gateway's is
          // now the client's. The model may call it again (the next turn offers the agent as it is).
          answer = failure('tool_unavailable', `the agent's tool ${input.call.name} changed while this call ran; call it again`, undefined, true);
          break;
        default:
          answer = failure('not_found', `no tool named ${input.call.name}`, undefined, false);
      }
      await withTransaction(deps.db, async (client) => {
        // Checked again under the lock: the run may have been closed while the tool ran.
        assertRunHoldsSession(await lockSession(client, input.sessionId), input.runId);
        await appendEvents(client, input.sessionId, storable([
          {
            type: 'user.tool_result',
            content: [
              {
                type: 'tool_result',
                tool_use_id: input.call.id,
                content: answer.content,
                ...(answer.is_error ? { is_error: true, error_code: answer.error_code } : { is_error: false }),
                ...(answer.status ? { status: answer.status } : {}),
              },
            ],
            error_code: answer.is_error ? answer.error_code : null,
            attributes: answer.citations?.length ? { _citations: answer.citations } : {},
            run_id: input.runId,
            idempotency_key: `${input.runId}:tool:${input.call.id}`,
            processed: true,
          },
        ]));
      });
    },
  };
}

export interface KnowledgeBaseCall {
  projectId: string;
  kind: 'kb_search' | 'kb_fetch';
  entry: { collection_id?: string; filters?: Record<string, unknown> | null };
  input: Record<string, unknown>;
}

const failure = (code: string, message: string, field: string | undefined, retryable: boolean): ToolAnswer => ({
  content: toolErrorEnvelope(code, message, { field, retryable }),
  is_error: true,
  error_code: code,
});
const unavailable = (name: string) => failure('tool_unavailable', `${name} is not served in this environment`, undefined, false);
