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
});
