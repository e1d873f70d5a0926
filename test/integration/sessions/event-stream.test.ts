import { startApi, type TestApi } from '../../support/harness';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession } from '../../../src/store/events';
import { bearer, createKey, createServiceToken, createSiblingProject, createTenant } from '../../support/factories';
import { revokeApiKey } from '../../../src/store/api-keys';
import { signBrowserToken } from '../../../src/auth/tokens';
import { apiClient, createSession, tenantWithAgent, type ApiClient } from './support';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '5000', EVENT_STREAM_KEEPALIVE_MS: '150', EVENT_STREAM_ACCESS_RECHECK_MS: '0', EVENT_STREAM_MAX_PER_CREDENTIAL: '5' });
});
afterAll(() => api.close());

/** A raw SSE reader over fetch: collects frames (blank-line separated) as they arrive. */
async function openStream(path: string, token: string, headers: Record<string, string> = {}) {
  const controller = new AbortController();
  const response = await fetch(`${api.url}${path}`, { headers: { ...bearer(token), ...headers }, signal: controller.signal });
  const frames: string[] = [];
  let waiters: Array<() => void> = [];
  let ended = false;
  if (response.ok && response.body) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = '';
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) {
            ended = true;
            break;
          }
          buffer += decoder.decode(value, { stream: true });
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            frames.push(buffer.slice(0, end));
            buffer = buffer.slice(end + 2);
          }
          waiters.forEach((wake) => wake());
          waiters = [];
        }
      } catch {
        // aborted by close()
      }
    })();
  }
  const events = () =>
    frames
      .filter((frame) => frame.split('\n').some((line) => line.startsWith('data: ')))
      .map((frame) => {
        const id = frame.split('\n').find((line) => line.startsWith('id: '))!.slice(4);
        const data = JSON.parse(frame.split('\n').find((line) => line.startsWith('data: '))!.slice(6));
        return { id, data };
      });
  const until = async (predicate: () => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs;
    while (!predicate()) {
      if (Date.now() > deadline) throw new Error(`stream condition not met; frames so far: ${JSON.stringify(frames)}`);
      await new Promise<void>((resolve) => {
        waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
  };
  return { response, frames, events, until, ended: () => ended, close: () => controller.abort() };
}

const note = (text: string) => ({ type: 'system.message', content: [{ type: 'text', text }] });
const append = async (client: ApiClient, sessionId: string, text: string) =>
  (await client.post(`/v1/sessions/${sessionId}/events`, { events: [note(text)] })).body.data[0].id as string;

describe('GET /v1beta1/sessions/{id}/events/stream', () => {
  test('delivers the events appended after it opens, in order, with their ids, in the listing shape', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    await append(client, session.id, 'before');
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    try {
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
      await stream.until(() => stream.frames.length > 0);
      const ids = [await append(client, session.id, 'one'), await append(client, session.id, 'two')];
      ids.push(...(await client.post(`/v1/sessions/${session.id}/events`, { events: [note('three'), note('four')] })).body.data.map((e: { id: string }) => e.id));
      await stream.until(() => stream.events().length >= 4);
      expect(stream.events().map((e) => e.id)).toEqual(ids);
      const listed = (await client.get(`/v1/sessions/${session.id}/events?after_id=${ids[0]}&limit=1`)).body.data[0];
      expect(stream.events()[1]!.data).toEqual(listed);
    } finally {
      stream.close();
    }
  });

  test('keep-alive comments flow while nothing happens', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    try {
      await stream.until(() => stream.frames.filter((frame) => frame === ': keep-alive').length >= 2);
    } finally {
      stream.close();
    }
  });

  test('Last-Event-ID resumes right after that event; an id of another session is 400', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const ids = [await append(client, session.id, 'a'), await append(client, session.id, 'b'), await append(client, session.id, 'c')];
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key, { 'last-event-id': ids[0]! });
    try {
      await stream.until(() => stream.events().length >= 2);
      ids.push(await append(client, session.id, 'd'));
      await stream.until(() => stream.events().length >= 3);
      expect(stream.events().map((e) => e.id)).toEqual(ids.slice(1));
    } finally {
      stream.close();
    }
    const other = await createSession(client, agent.id);
    const otherId = await append(client, other.id, 'x');
    const refused = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key, { 'last-event-id': otherId });
    expect(refused.response.status).toBe(400);
    // An over-long id is refused by its schema, and not echoed back.
    const long = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key, { 'last-event-id': 'x'.repeat(5000) });
    expect(long.response.status).toBe(400);
    expect(JSON.stringify(await long.response.json())).not.toContain('x'.repeat(65));
  });

  test('a session whose agent moved to another project since the stream opened: the stream closes, nothing more is sent', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    try {
      await stream.until(() => stream.frames.length > 0);
      await append(client, session.id, 'seen');
      await stream.until(() => stream.events().length === 1);
      const site = apiClient(api, await createServiceToken(api.deps.db, tenant.accountId));
      const sibling = await createSiblingProject(api.deps.db, tenant.accountId);
      expect((await site.patch(`/v1/agents/${agent.id}`, { project_id: sibling })).status).toBe(200);
      await append(site, session.id, 'not for the old project');
      await stream.until(() => stream.ended());
      expect(stream.events().map((e) => e.data.content[0].text)).toEqual(['seen']);
    } finally {
      stream.close();
    }
  });

  test('a stream whose key is revoked, or whose browser token expires, closes before sending anything more', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const key = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
    const { token } = await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: agent.id }, 2);
    const byKey = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, key.key);
    const byToken = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, token);
    try {
      await append(client, session.id, 'seen');
      await byKey.until(() => byKey.events().length === 1);
      await byToken.until(() => byToken.events().length === 1);
      expect(await revokeApiKey(api.deps.db, key.id)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 2100)); // the browser token has expired
      await append(client, session.id, 'after revocation and expiry');
      await byKey.until(() => byKey.ended());
      await byToken.until(() => byToken.ended());
      expect(byKey.events().map((e) => e.data.content[0].text)).toEqual(['seen']);
      expect(byToken.events().map((e) => e.data.content[0].text)).toEqual(['seen']);
    } finally {
      byKey.close();
      byToken.close();
    }
  });

  test('an idle stream of a session that is deleted closes at its next keep-alive', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    try {
      await stream.until(() => stream.frames.includes(': keep-alive'));
      expect((await client.delete(`/v1/sessions/${session.id}`)).status).toBe(204);
      await stream.until(() => stream.ended());
    } finally {
      stream.close();
    }
  });

  test('one credential holds at most EVENT_STREAM_MAX_PER_CREDENTIAL open streams (here 5): the next is 429 until one closes', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const path = `/v1beta1/sessions/${session.id}/events/stream`;
    const open: Array<Awaited<ReturnType<typeof openStream>>> = [];
    for (let i = 0; i < 5; i++) open.push(await openStream(path, tenant.key));
    try {
      expect(open.map((s) => s.response.status)).toEqual([200, 200, 200, 200, 200]);
      const refused = await fetch(`${api.url}${path}`, { headers: bearer(tenant.key) });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(((await refused.json()) as { error: unknown }).error).toMatchObject({ type: 'rate_limit_error', message: expect.stringMatching(/at most 5 event streams/) });
      // Another credential of the same project is not affected.
      const other = await createKey(api.deps.db, { projectId: tenant.projectId, preset: 'all' });
      const second = await openStream(path, other.key);
      expect(second.response.status).toBe(200);
      second.close();
      open.pop()!.close();
      let again: Awaited<ReturnType<typeof openStream>> | undefined;
      for (let attempt = 0; attempt < 50 && again?.response.status !== 200; attempt++) {
        again?.close();
        await new Promise((resolve) => setTimeout(resolve, 20));
        again = await openStream(path, tenant.key);
      }
      expect(again!.response.status).toBe(200);
      open.push(again!);
    } finally {
      open.forEach((s) => s.close());
    }
  });

  test('a browser token re-encoded (its signature differing only in unused bits) is the same credential for the limit', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const path = `/v1beta1/sessions/${session.id}/events/stream`;
    const { token } = await signBrowserToken(api.deps.config, { accountId: tenant.accountId, projectId: tenant.projectId, agentId: agent.id }, 600);
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const variant = `${token.slice(0, -1)}${alphabet[alphabet.indexOf(token.at(-1)!) ^ 1]}`;
    expect((await fetch(`${api.url}/v1/sessions/${session.id}/events`, { headers: bearer(variant) })).status).toBe(200); // accepted: the same token
    const open: Array<Awaited<ReturnType<typeof openStream>>> = [];
    for (let i = 0; i < 5; i++) open.push(await openStream(path, token));
    try {
      expect(open.map((s) => s.response.status)).toEqual([200, 200, 200, 200, 200]);
      expect((await fetch(`${api.url}${path}`, { headers: bearer(variant) })).status).toBe(429);
    } finally {
      open.forEach((s) => s.close());
    }
  });

  test('clients that abort while their stream is being set up leave nothing behind and break nothing', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const path = `${api.url}/v1beta1/sessions/${session.id}/events/stream`;
    await Promise.all(
      Array.from({ length: 60 }, async (_, i) => {
        const controller = new AbortController();
        setTimeout(() => controller.abort(), i % 6);
        await fetch(path, { headers: bearer(tenant.key), signal: controller.signal }).then((r) => r.body?.cancel()).catch(() => undefined);
      }),
    );
    // The api is alive, and every slot came back: the full allowance of streams opens again.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const open: Array<Awaited<ReturnType<typeof openStream>>> = [];
    try {
      for (let i = 0; i < 5; i++) open.push(await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key));
      expect(open.map((s) => s.response.status)).toEqual([200, 200, 200, 200, 200]);
      await append(client, session.id, 'still here');
      await Promise.all(open.map((s) => s.until(() => s.events().length === 1)));
    } finally {
      open.forEach((s) => s.close());
    }
  });

  test('a client that closes its stream is a normal end: nothing is logged as a failure', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    await append(client, session.id, 'read, then leave');
    await stream.until(() => stream.events().length === 1);
    stream.close();
    // Events appended after the client left must not find a half-closed stream either.
    await append(client, session.id, 'after the client left');
    await new Promise((resolve) => setTimeout(resolve, 300));
    const failures = api.logs.filter((line) => line.includes(session.id) && /"level":(40|50)/.test(line));
    expect(failures).toEqual([]);
  });

  test('without include_thinking, an agent.message holding only a thought is not streamed (with it, it is)', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id);
    const plain = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, tenant.key);
    const thinking = await openStream(`/v1beta1/sessions/${session.id}/events/stream?include_thinking=true`, tenant.key);
    try {
      await plain.until(() => plain.frames.length > 0);
      await thinking.until(() => thinking.frames.length > 0);
      await withTransaction(api.deps.db, async (tx) => {
        await lockSession(tx, session.id);
        await appendEvents(tx, session.id, [{ type: 'agent.message', content: [{ type: 'thought', text: 'pondering' }], processed: true }]);
      });
      const after = await append(client, session.id, 'after the thought');
      await plain.until(() => plain.events().some((e) => e.id === after));
      await thinking.until(() => thinking.events().some((e) => e.id === after));
      expect(plain.events().map((e) => e.data.type)).toEqual(['system.message']);
      expect(thinking.events().map((e) => e.data.type)).toEqual(['agent.message', 'system.message']);
    } finally {
      plain.close();
      thinking.close();
    }
  });

  test('same callers as the event routes: browser tokens bound to the agent; other projects get 404', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const session = await createSession(client, agent.id, { owner_id: 'v1' });
    const token = (await client.post('/v1/browser-tokens', { agent_id: agent.id, owner_id: 'v1' })).body.token;
    const stream = await openStream(`/v1beta1/sessions/${session.id}/events/stream`, token);
    try {
      expect(stream.response.status).toBe(200);
      await stream.until(() => stream.frames.length > 0);
      const id = await append(client, session.id, 'hello');
      await stream.until(() => stream.events().length === 1);
      expect(stream.events()[0]!.id).toBe(id);
    } finally {
      stream.close();
    }
    const wrongVisitor = (await client.post('/v1/browser-tokens', { agent_id: agent.id, owner_id: 'v2' })).body.token;
    expect((await openStream(`/v1beta1/sessions/${session.id}/events/stream`, wrongVisitor)).response.status).toBe(404);
    const outsider = await createTenant(api.deps.db);
    expect((await openStream(`/v1beta1/sessions/${session.id}/events/stream`, outsider.key)).response.status).toBe(404);
    expect(tenant.projectId).toBeTruthy();
  });

  test('many streams on many sessions share one listener and each gets only its own events', async () => {
    const { client, agent, tenant } = await tenantWithAgent(api);
    const sessions = await Promise.all(Array.from({ length: 5 }, () => createSession(client, agent.id)));
    const streams = await Promise.all(sessions.map((s) => openStream(`/v1beta1/sessions/${s.id}/events/stream`, tenant.key)));
    try {
      await Promise.all(streams.map((s) => s.until(() => s.frames.length > 0)));
      const ids = await Promise.all(sessions.map((s, i) => append(client, s.id, `for ${i}`)));
      await Promise.all(streams.map((s) => s.until(() => s.events().length >= 1)));
      await new Promise((resolve) => setTimeout(resolve, 200));
      streams.forEach((s, i) => expect(s.events().map((e) => e.id)).toEqual([ids[i]]));
    } finally {
      streams.forEach((s) => s.close());
    }
  });
});
