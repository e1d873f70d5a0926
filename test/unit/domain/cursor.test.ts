import { decodeCursor, encodeCursor } from '../../../src/domain/cursor';

describe('cursors', () => {
  test('round-trip within their list, refused by another list or when malformed', () => {
    const cursor = { list: 'events:s1:asc', at: '2025-01-01T00:00:00.123456Z', key: '42' };
    const text = encodeCursor(cursor);
    expect(decodeCursor(text, 'events:s1:asc')).toEqual(cursor);
    expect(decodeCursor(text, 'events:s1:desc')).toBeUndefined();
    expect(decodeCursor('not-a-cursor', 'events:s1:asc')).toBeUndefined();
    expect(decodeCursor(Buffer.from('["events:s1:asc","yesterday","1"]').toString('base64url'), 'events:s1:asc')).toBeUndefined();
  });

  test('a time Postgres cannot take is a tampered cursor: Feb 30, the year 0000 (JavaScript has it, Postgres does not)', () => {
    const at = (time: string) => decodeCursor(encodeCursor({ list: 'sessions:p', at: time, key: 'k' }), 'sessions:p');
    expect(at('2025-02-30T00:00:00.000000Z')).toBeUndefined();
    expect(at('0000-01-01T00:00:00.000000Z')).toBeUndefined();
    expect(at('0000-12-31T23:59:59.999999Z')).toBeUndefined();
    expect(at('0001-01-01T00:00:00.000000Z')).toEqual({ list: 'sessions:p', at: '0001-01-01T00:00:00.000000Z', key: 'k' });
  });
});
