import { startApi, type TestApi } from '../../support/harness';
import { uniqueId } from '../../support/config';
import { bearer, createTenant, json, usageRow, type Tenant } from '../../support/factories';
import { insertUsage, type UsageRow } from '../../../src/billing/usage';
import { signDevIdpToken } from '../../../src/auth/tokens';

let api: TestApi;
let tenant: Tenant;
let token: string;
beforeAll(async () => {
  api = await startApi();
  tenant = await createTenant(api.deps.db);
  token = await signDevIdpToken(api.deps.config, { subject: uniqueId('analyst-'), accountIds: [tenant.accountId] });
});
afterAll(() => api.close());

// A fixed UTC midnight far in the past, so nothing else writes into these windows.
const T0 = Date.UTC(2024, 2, 10) / 1000;
const HOUR = 3600;
const DAY = 86400;

function usage(projectId: string, at: number, overrides: Partial<UsageRow> = {}): UsageRow {
  return usageRow(projectId, { model: 'openai/gpt-a', credits_nano: 100, createdAt: new Date(at * 1000), ...overrides });
}

const write = async (rows: UsageRow[]) => {
  for (const row of rows) await insertUsage(api.deps.db, row);
};

const query = (params: Record<string, string | number>, credential = token) =>
  fetch(`${api.url}/v1/analytics?${new URLSearchParams(Object.entries(params).map(([k, v]): [string, string] => [k, String(v)]))}`, { headers: bearer(credential) });

async function ok(params: Record<string, string | number>) {
  const response = await query(params);
  const body = await json(response);
  if (response.status !== 200) throw new Error(`${response.status} ${JSON.stringify(body)}`);
  return body;
}

async function freshProject(): Promise<string> {
  return (await createTenant(api.deps.db, { credits: 0n }).then(async (t) => {
    // the analyst's token must reach the new account too
    token = await signDevIdpToken(api.deps.config, { subject: uniqueId('analyst-'), accountIds: [tenant.accountId, t.accountId] });
    return t;
  })).projectId;
}

describe('GET /v1/analytics: response', () => {
  test('defaults: 1d buckets grouped by model and operation; window echo, totals and every bucket', async () => {
    const project = await freshProject();
    await write([
      usage(project, T0 + 10, { credits_nano: 500 }),
      usage(project, T0 + 20, { credits_nano: 700, operation: 'image', model: 'openai/img' }),
      usage(project, T0 + DAY + 5, { credits_nano: 300 }),
    ]);
    const body = await ok({ project_id: project, start_time: T0, end_time: T0 + 3 * DAY });
    expect(body).toEqual({
      project_id: project,
      bucket_width: '1d',
      start_time: '2024-03-10T00:00:00.000Z',
      end_time: '2024-03-13T00:00:00.000Z',
      group_by: ['model', 'operation'],
      totals: {
        credits_nano: 1500,
        request_count: 3,
        models: [
          { model: 'openai/gpt-a', operation: 'chat', credits_nano: 800, request_count: 2 },
          { model: 'openai/img', operation: 'image', credits_nano: 700, request_count: 1 },
        ],
      },
      buckets: [
        {
          start_time: '2024-03-10T00:00:00.000Z',
          end_time: '2024-03-11T00:00:00.000Z',
          credits_nano: 1200,
          request_count: 2,
          models: [
            { model: 'openai/img', operation: 'image', credits_nano: 700, request_count: 1 },
            { model: 'openai/gpt-a', operation: 'chat', credits_nano: 500, request_count: 1 },
          ],
        },
        { start_time: '2024-03-11T00:00:00.000Z', end_time: '2024-03-12T00:00:00.000Z', credits_nano: 300, request_count: 1, models: [{ model: 'openai/gpt-a', operation: 'chat', credits_nano: 300, request_count: 1 }] },
        { start_time: '2024-03-12T00:00:00.000Z', end_time: '2024-03-13T00:00:00.000Z', credits_nano: 0, request_count: 0, models: [] },
      ],
    });
  });

  test('start_time is inclusive and end_time exclusive, to the second', async () => {
    const project = await freshProject();
    const start = T0 + 5 * HOUR;
    const end = start + HOUR;
    await write([
      usage(project, start - 1, { credits_nano: 1 }),
      usage(project, start, { credits_nano: 10 }),
      usage(project, end - 1, { credits_nano: 100 }),
      usage(project, end, { credits_nano: 1000 }),
    ]);
    for (const width of ['10m', '1h', '1d']) {
      const body = await ok({ project_id: project, start_time: start, end_time: end, bucket_width: width });
      expect(body.totals.credits_nano).toBe(110);
      expect(body.totals.request_count).toBe(2);
    }
  });

  test('empty buckets are present: six 10-minute buckets in an hour, one with usage', async () => {
    const project = await freshProject();
    await write([usage(project, T0 + 25 * 60)]);
    const body = await ok({ project_id: project, start_time: T0, end_time: T0 + HOUR, bucket_width: '10m' });
    expect(body.buckets.map((b: { start_time: string }) => b.start_time)).toEqual(
      [0, 10, 20, 30, 40, 50].map((m) => new Date((T0 + m * 60) * 1000).toISOString()),
    );
    expect(body.buckets.map((b: { request_count: number }) => b.request_count)).toEqual([0, 0, 1, 0, 0, 0]);
    expect(body.buckets[0].models).toEqual([]);
  });

  test('buckets are UTC-aligned; the first and last are clipped to an unaligned window', async () => {
    const project = await freshProject();
    const body = await ok({ project_id: project, start_time: T0 + 90 * 60 + 7, end_time: T0 + 4 * HOUR + 3, bucket_width: '1h' });
    expect(body.buckets.map((b: { start_time: string; end_time: string }) => [b.start_time.slice(11, 19), b.end_time.slice(11, 19)])).toEqual([
      ['01:30:07', '02:00:00'],
      ['02:00:00', '03:00:00'],
      ['03:00:00', '04:00:00'],
      ['04:00:00', '04:00:03'],
    ]);
  });

  test('ties on credits are ordered by model, operation, client_id, auth_method, actor_type, application ascending', async () => {
    const project = await freshProject();
    const same = { credits_nano: 50 };
    await write([
      usage(project, T0 + 1, { ...same, model: 'm-b', operation: 'chat', clientId: 'c1' }),
      usage(project, T0 + 2, { ...same, model: 'm-a', operation: 'image', clientId: 'c1' }),
      usage(project, T0 + 3, { ...same, model: 'm-a', operation: 'chat', clientId: 'c2' }),
      usage(project, T0 + 4, { ...same, model: 'm-a', operation: 'chat', clientId: 'c1', application: 'third_party' }),
      usage(project, T0 + 5, { ...same, model: 'm-a', operation: 'chat', clientId: 'c1', application: 'svc-agents' }),
      usage(project, T0 + 6, { credits_nano: 51, model: 'z-last-by-name', operation: 'zzz' }),
    ]);
    const body = await ok({ project_id: project, start_time: T0, end_time: T0 + HOUR, bucket_width: '10m', group_by: 'application,client_id,operation,model' });
    expect(body.group_by).toEqual(['model', 'operation', 'client_id', 'application']);
    expect(body.totals.models.map((r: Record<string, string>) => [r.model, r.operation, r.client_id, r.application])).toEqual([
      ['z-last-by-name', 'zzz', '', 'unknown'],
      ['m-a', 'chat', 'c1', 'svc-agents'],
      ['m-a', 'chat', 'c1', 'third_party'],
      ['m-a', 'chat', 'c2', 'unknown'],
      ['m-a', 'image', 'c1', 'unknown'],
      ['m-b', 'chat', 'c1', 'unknown'],
    ]);
  });

  test('group_by decides which dimensions a row carries; client_id is empty for usage without a site', async () => {
    const project = await freshProject();
    await write([
      usage(project, T0 + 1, { clientId: 'site-client', authMethod: 'service_token', actorType: 'service', application: 'svc-kb-sync' }),
      usage(project, T0 + 2, { clientId: null, authMethod: 'browser_session', actorType: 'anonymous', application: 'svc-ai-chatbot' }),
    ]);
    const body = await ok({ project_id: project, start_time: T0, end_time: T0 + DAY, group_by: 'client_id,auth_method,actor_type,application' });
    expect(body.totals.models).toEqual([
      { client_id: '', auth_method: 'browser_session', actor_type: 'anonymous', application: 'svc-ai-chatbot', credits_nano: 100, request_count: 1 },
      { client_id: 'site-client', auth_method: 'service_token', actor_type: 'service', application: 'svc-kb-sync', credits_nano: 100, request_count: 1 },
    ]);
  });

  test('filters: client_id, auth_method, actor_type, application', async () => {
    const project = await freshProject();
    await write([
      usage(project, T0 + 1, { clientId: 'c-1', authMethod: 'service_token', actorType: 'service', application: 'svc-connector', credits_nano: 1 }),
      usage(project, T0 + 2, { clientId: 'c-2', authMethod: 'api_key', actorType: 'authenticated', application: 'third_party', credits_nano: 10 }),
      usage(project, T0 + 3, { clientId: null, authMethod: 'okta', actorType: 'authenticated', application: 'svc-coworker', credits_nano: 100 }),
    ]);
    const total = async (filter: Record<string, string>) => (await ok({ project_id: project, start_time: T0, end_time: T0 + DAY, ...filter })).totals.credits_nano;
    expect(await total({ client_id: 'c-1' })).toBe(1);
    expect(await total({ auth_method: 'api_key' })).toBe(10);
    expect(await total({ actor_type: 'authenticated' })).toBe(110);
    expect(await total({ application: 'svc-coworker' })).toBe(100);
    expect(await total({ actor_type: 'authenticated', auth_method: 'okta' })).toBe(100);
  });
});

describe('GET /v1/analytics: rollup correctness', () => {
  test('unaligned windows mixing rollup grains and raw edges equal a direct sum of the rows', async () => {
    const project = await freshProject();
    // Deterministic pseudo-random usage over 4 days.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31);
    const rows = Array.from({ length: 400 }, () =>
      usage(project, T0 + (next() % (4 * DAY)), {
        model: ['m1', 'm2', 'm3'][next() % 3]!,
        operation: ['chat', 'image'][next() % 2]!,
        credits_nano: next() % 1000,
      }),
    );
    // One multi-row statement too: the statement-level trigger aggregates a batch.
    await write(rows.slice(0, 300));
    await api.deps.db.query(
      `INSERT INTO usage_records (created_at, project_id, model, operation, credits_nano)
       SELECT to_timestamp(x), $1, m, o, c FROM unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[]) AS t(x, m, o, c)`,
      [project, rows.slice(300).map((r) => r.createdAt!.getTime() / 1000), rows.slice(300).map((r) => r.model), rows.slice(300).map((r) => r.operation), rows.slice(300).map((r) => r.credits_nano)],
    );
    const windows: [number, number, string][] = [
      [T0 + 3 * HOUR + 17 * 60 + 13, T0 + 3 * DAY + 5 * HOUR + 59, '1d'],
      [T0 + 1234, T0 + 6 * DAY - 1, '1d'],
      [T0 + DAY + 601, T0 + 2 * DAY + 7 * HOUR + 1, '1h'],
      [T0 + 2 * DAY + 61, T0 + 2 * DAY + 20 * HOUR + 59, '10m'],
    ];
    for (const [start, end, width] of windows) {
      const body = await ok({ project_id: project, start_time: start, end_time: end, bucket_width: width });
      const inWindow = rows.filter((r) => r.createdAt!.getTime() / 1000 >= start && r.createdAt!.getTime() / 1000 < end);
      expect(body.totals.request_count).toBe(inWindow.length);
      expect(body.totals.credits_nano).toBe(inWindow.reduce((sum, r) => sum + r.credits_nano, 0));
      for (const bucket of body.buckets) {
        const from = Date.parse(bucket.start_time) / 1000;
        const to = Date.parse(bucket.end_time) / 1000;
        const expected = inWindow.filter((r) => r.createdAt!.getTime() / 1000 >= from && r.createdAt!.getTime() / 1000 < to);
        expect([bucket.start_time, bucket.request_count, bucket.credits_nano]).toEqual([bucket.start_time, expected.length, expected.reduce((s, r) => s + r.credits_nano, 0)]);
        expect(bucket.models.reduce((s: number, m: { request_count: number }) => s + m.request_count, 0)).toBe(expected.length);
      }
    }
  });

  test('the trigger keeps every grain equal to the usage rows', async () => {
    const project = await freshProject();
    await write([usage(project, T0 + 1), usage(project, T0 + 599), usage(project, T0 + 601), usage(project, T0 + DAY)]);
    const expected: Record<string, number> = { usage_rollup_10m: 3, usage_rollup_1h: 2, usage_rollup_1d: 2, usage_rollup_mo_10m: 3, usage_rollup_mo_1h: 2, usage_rollup_mo_1d: 2 };
    for (const table of Object.keys(expected)) {
      const { rows } = await api.deps.db.query(`SELECT count(*)::int AS n, sum(request_count)::int AS requests FROM ${table} WHERE project_id = $1`, [project]);
      expect(rows[0].requests).toBe(4);
      expect([table, rows[0].n]).toEqual([table, expected[table]]);
    }
  });
});

describe('GET /v1/analytics: parameters', () => {
  test.each([
    ['10m over 24 hours', { bucket_width: '10m', start_time: T0, end_time: T0 + DAY + 1 }, 'start_time'],
    ['1h over 7 days', { bucket_width: '1h', start_time: T0, end_time: T0 + 7 * DAY + 1 }, 'start_time'],
    ['1d over 30 days', { start_time: T0, end_time: T0 + 30 * DAY + 1 }, 'start_time'],
    ['end before start', { start_time: T0, end_time: T0 - 1 }, 'end_time'],
    ['empty window', { start_time: T0, end_time: T0 }, 'end_time'],
    ['missing start_time', {}, 'start_time'],
    ['non-numeric start_time', { start_time: 'yesterday' }, 'start_time'],
    ['bad bucket_width', { start_time: T0, bucket_width: '1w' }, 'bucket_width'],
    ['unknown group_by dimension', { start_time: T0, group_by: 'model,region' }, 'group_by'],
    ['empty client_id', { start_time: T0, client_id: '' }, 'client_id'],
    ['unknown auth_method', { start_time: T0, auth_method: 'password' }, 'auth_method'],
    ['unknown actor_type', { start_time: T0, actor_type: 'robot' }, 'actor_type'],
    ['unknown application', { start_time: T0, application: 'svc-other' }, 'application'],
    ['unknown parameter', { start_time: T0, end_time: T0 + 1, bucket: '1d' }, 'bucket'],
    // (Names objects inherit are parameters like any other: unknown, not "given more than once".)
    ['an inherited name as a parameter', { start_time: T0, end_time: T0 + 1, toString: '1' }, 'Unrecognized key'],
  ])('%s: 400 naming the parameter', async (_label, params, field) => {
    const response = await query({ project_id: tenant.projectId, ...params });
    expect(response.status).toBe(400);
    expect((await json(response)).error.message).toContain(field);
  });

  test('maximum windows are inclusive: exactly 24 h / 7 d / 30 d are accepted', async () => {
    expect((await ok({ project_id: tenant.projectId, start_time: T0, end_time: T0 + DAY, bucket_width: '10m' })).buckets).toHaveLength(144);
    expect((await ok({ project_id: tenant.projectId, start_time: T0, end_time: T0 + 7 * DAY, bucket_width: '1h' })).buckets).toHaveLength(168);
    expect((await ok({ project_id: tenant.projectId, start_time: T0, end_time: T0 + 30 * DAY })).buckets).toHaveLength(30);
  });

  test('end_time defaults to now', async () => {
    const now = Math.floor(Date.now() / 1000);
    const body = await ok({ project_id: tenant.projectId, start_time: now - HOUR, bucket_width: '10m' });
    expect(Math.abs(Date.parse(body.end_time) / 1000 - now)).toBeLessThanOrEqual(5);
  });
});

describe('GET /v1/analytics: callers', () => {
  test('API keys and service tokens are refused (403); no token is 401', async () => {
    expect((await query({ project_id: tenant.projectId, start_time: T0 }, tenant.key)).status).toBe(403);
    const anonymous = await fetch(`${api.url}/v1/analytics?project_id=${tenant.projectId}&start_time=${T0}`);
    expect(anonymous.status).toBe(401);
    expect(anonymous.headers.get('www-authenticate')).toMatch(/^Bearer realm=/);
  });

  test('a user outside the project account gets 403; an unknown project answers the same', async () => {
    const outsider = await signDevIdpToken(api.deps.config, { subject: 'outsider', accountIds: [(await createTenant(api.deps.db)).accountId] });
    const response = await query({ project_id: tenant.projectId, start_time: T0, end_time: T0 + DAY }, outsider);
    expect(response.status).toBe(403);
    expect((await json(response)).error.type).toBe('permission_error');
    expect((await query({ project_id: 'proj_doesnotexist', start_time: T0, end_time: T0 + DAY })).status).toBe(403);
  });
});
