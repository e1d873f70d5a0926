import { compareRows } from '../../../src/domain/analytics';

const row = (client_id: string, credits_nano = 5) => ({ model: 'm', operation: 'chat', client_id, credits_nano, request_count: 1 });

test('ties on credits are ordered by code point, not by UTF-16 unit (U+FF21 before U+1F600)', () => {
  const rows = [row('😀site'), row('Ａsite'), row('zsite'), row('big', 9)];
  expect(rows.sort(compareRows).map((r) => r.client_id)).toEqual(['big', 'zsite', 'Ａsite', '😀site']);
});
