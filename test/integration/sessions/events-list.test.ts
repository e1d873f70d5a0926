import { startApi, type TestApi } from '../../support/harness';
import { createTenant } from '../../support/factories';
import { withTransaction } from '../../../src/store/db';
import { appendEvents, lockSession } from '../../../src/store/events';
import { apiClient, createSession, tenantWithAgent, type ApiClient } from './support';

let api: TestApi;
beforeAll(async () => {
  api = await startApi({ RATE_LIMIT_BURST: '100000', RATE_LIMIT_PER_SECOND: '100000' });
});
afterAll(() => api.close());

const note = (text: string) => ({ type: 'system.message', content: [{ type: 'text', text }] });

async function sessionWithNotes(count: number) {
  const { client, agent, tenant } = await tenantWithAgent(api);
  const session = await createSession(client, agent.id);
  const ids: string[] = [];
  for (let i = 0; i < count; i++) ids.push((await client.post(`/v1/sessions/${session.id}/events`, { events: [note(`n${i}`)] })).body.data[0].id);
  return { client, session, ids, tenant };
}

async function walk(client: ApiClient, sessionId: string, query: string): Promise<string[]> {
  const seen: string[] = [];
  let page: string | null = null;
  do {
    const reply = await client.get(`/v1/sessions/${sessionId}/events?${query}${page ? `&page=${encodeURIComponent(page)}` : ''}`);
    expect(reply.status).toBe(200);
    seen.push(...reply.body.data.map((event: { id: string }) => event.id));
    page = reply.body.next_page;
  } while (page);
  return seen;
}

describe('GET /v1/sessions/{id}/events', () => {
  test('ascending by default, descending on request, limit default 20 and max 100', async () => {
    const { client, session, ids } = await sessionWithNotes(23);
    const first = await client.get(`/v1/sessions/${session.id}/events`);
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(0, 20));
    expect(first.body.next_page).toEqual(expect.any(String));
    expect(await walk(client, session.id, 'limit=5')).toEqual(ids);
    expect(await walk(client, session.id, 'limit=5&order=desc')).toEqual([...ids].reverse());
    expect((await client.get(`/v1/sessions/${session.id}/events?limit=100`)).body).toMatchObject({ next_page: null });
    expect((await client.get(`/v1/sessions/${session.id}/events?limit=101`)).status).toBe(400);
    expect((await client.get(`/v1/sessions/${session.id}/events?limit=0`)).status).toBe(400);
    expect((await client.get(`/v1/sessions/${session.id}/events?order=sideways`)).status).toBe(400);
    const times = first.body.data.map((e: { created_at: string }) => Date.parse(e.created_at));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
  });

  test('after_id: strictly after in the chosen order; must belong to this session; never with page', async () => {
    const { client, session, ids } = await sessionWithNotes(6);
    const after = (query: string) => client.get(`/v1/sessions/${session.id}/events?${query}`);
    expect((await after(`after_id=${ids[2]}`)).body.data.map((e: { id: string }) => e.id)).toEqual(ids.slice(3));
    expect((await after(`after_id=${ids[2]}&order=desc`)).body.data.map((e: { id: string }) => e.id)).toEqual([ids[1], ids[0]]);
    expect((await after(`after_id=${ids[5]}`)).body).toEqual({ data: [], next_page: null });
    const other = await sessionWithNotes(1);
    const foreign = await after(`after_id=${other.ids[0]}`);
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.message).toMatch(/after_id/);
    expect((await after('after_id=evt_unknown')).status).toBe(400);
    const page = (await after('limit=2')).body.next_page;
    const both = await after(`after_id=${ids[0]}&page=${page}`);
    expect(both.status).toBe(400);
    expect(both.body.error.message).toMatch(/mutually exclusive/);
  });

  test('page cursors are bound to their session and order', async () => {
    const { client, session } = await sessionWithNotes(3);
    const page = (await client.get(`/v1/sessions/${session.id}/events?limit=1`)).body.next_page;
    expect((await client.get(`/v1/sessions/${session.id}/events?limit=1&order=desc&page=${page}`)).status).toBe(400);
    const other = await sessionWithNotes(3);
    expect((await other.client.get(`/v1/sessions/${other.session.id}/events?page=${page}`)).status).toBe(400);
    expect((await client.get(`/v1/sessions/${session.id}/events?page=%%%`)).status).toBe(400);
  });

  test('include_thinking keeps thought blocks on agent.message; they are dropped without it', async () => {
    const { client, session } = await sessionWithNotes(0);
    const thought = { type: 'thought', text: 'pondering', extra_content: { gateway: { thinking_ms: 12 } } };
    const text = { type: 'text', text: 'answer', citations: [{ type: 'knowledge_base', document_uri: 'https://d', document_title: 'D' }] };
    // The runtime appends agent messages this way (the workflow itself is tested elsewhere).
    await withTransaction(api.deps.db, async (db) => {
      await lockSession(db, session.id);
      await appendEvents(db, session.id, [{ type: 'agent.message', content: [thought, text], processed: true }]);
    });
    const plain = (await client.get(`/v1/sessions/${session.id}/events`)).body.data[0];
    expect(plain.content).toEqual([text]);
    const thinking = (await client.get(`/v1/sessions/${session.id}/events?include_thinking=true`)).body.data[0];
    expect(thinking.content).toEqual([thought, text]);
    expect((await client.get(`/v1/sessions/${session.id}/events?include_thinking=maybe`)).status).toBe(400);
  });

  test('another project: 404 identical to an absent session', async () => {
    const { session } = await sessionWithNotes(1);
    const outsider = apiClient(api, (await createTenant(api.deps.db)).key);
    const foreign = await outsider.get(`/v1/sessions/${session.id}/events`);
    const absent = await outsider.get('/v1/sessions/sesn_absent/events');
    expect(foreign.status).toBe(404);
    expect({ ...foreign.body.error, request_id: '' }).toEqual({ ...absent.body.error, request_id: '' });
  });
});

describe('paging while 20 writers append concurrently', () => {
  async function withWriters(client: ApiClient, sessionId: string, during: () => Promise<void>, writeForMs: number) {
    let writing = true;
    let appended = 0;
    const writers = Array.from({ length: 20 }, async (_, w) => {
      while (writing) {
        const reply = await client.post(`/v1/sessions/${sessionId}/events`, { events: [note(`w${w}`), note(`w${w}b`)] });
        expect(reply.status).toBe(200);
        appended += 2;
      }
    });
    const stop = setTimeout(() => (writing = false), writeForMs);
    try {
      await during();
    } finally {
      clearTimeout(stop);
      writing = false;
      await Promise.all(writers);
    }
    return appended;
  }

  test('ascending: the walk yields the whole final log, in order, with no duplicate and no gap', async () => {
    const { client, session } = await sessionWithNotes(10);
    let seen: string[] = [];
    const appended = await withWriters(client, session.id, async () => {
      seen = await walk(client, session.id, 'limit=7');
    }, 800);
    // Writers may still have appended after the walk reached the end: read the rest from where it stopped.
    const rest = await walk(client, session.id, `limit=100&after_id=${seen[seen.length - 1]}`);
    const log = await walk(client, session.id, 'limit=100');
    expect(appended).toBeGreaterThan(20);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen, ...rest]).toEqual(log);
  });

  test('descending: the walk yields exactly the events that existed when it began, newest first', async () => {
    const { client, session } = await sessionWithNotes(30);
    let seen: string[] = [];
    await withWriters(client, session.id, async () => {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await walk(client, session.id, 'limit=7&order=desc');
    }, 2000);
    const log = await walk(client, session.id, 'limit=100');
    expect(seen.length).toBeGreaterThanOrEqual(30);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen).toEqual(log.slice(0, seen.length).reverse());
  });
});
