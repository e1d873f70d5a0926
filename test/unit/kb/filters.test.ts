import type { StoredDocument } from '../../../src/search/documents';
import { documentWithinCeiling, filterClauses } from '../../../src/search/filters';

const doc: StoredDocument = {
  collection_id: 'c',
  doc_id: 'd',
  content: 'x',
  type: 'post',
  uri: 'https://ex.com/a',
  language: 'en',
  created_at: '2024-01-15T00:00:00.000Z',
  metadata: { tags: ['a', 'b'], region: 'eu' },
  indexed_at: '2024-01-15T00:00:00.000Z',
};

describe('filterClauses', () => {
  test('always scopes to the collection; filters and ceiling are ANDed clause by clause', () => {
    expect(filterClauses('c1')).toEqual([{ term: { collection_id: 'c1' } }]);
    const clauses = filterClauses('c1', { type: ['post'], metadata: { tags: ['a'] } }, { type: ['page'], language: ['DE'], created_at: { lte: '2024-01-01T00:00:00Z' } });
    expect(clauses).toEqual([
      { term: { collection_id: 'c1' } },
      { terms: { type: ['post'] } },
      { terms: { 'metadata.tags': ['a'] } },
      { terms: { type: ['page'] } },
      { terms: { language: ['de'] } },
      { range: { created_at: { lte: '2024-01-01T00:00:00.000Z', format: 'strict_date_optional_time' } } },
    ]);
  });

  test('date bounds go out in UTC, also a ceiling stored before bounds were normalised (offsets Elasticsearch refuses)', () => {
    const clauses = filterClauses('c1', undefined, { created_at: { gte: '2024-01-01T00:00:00+19:00', lte: '2024-01-02T00:00:00.1234567891Z' } });
    expect(clauses[1]).toEqual({ range: { created_at: { gte: '2023-12-31T05:00:00.000Z', lte: '2024-01-02T00:00:00.123Z', format: 'strict_date_optional_time' } } });
  });

  test('null ceiling members add nothing; an empty list stays (matches nothing)', () => {
    expect(filterClauses('c', undefined, { type: null, uri: [] })).toEqual([{ term: { collection_id: 'c' } }, { terms: { uri: [] } }]);
  });

  test('a date range with neither bound constrains nothing (documents without the date stay in)', () => {
    expect(filterClauses('c', { created_at: {} }, { modified_at: {} })).toEqual([{ term: { collection_id: 'c' } }]);
  });
});

describe('documentWithinCeiling', () => {
  test('no ceiling or an empty one admits everything', () => {
    expect(documentWithinCeiling(doc)).toBe(true);
    expect(documentWithinCeiling(doc, null)).toBe(true);
    expect(documentWithinCeiling(doc, {})).toBe(true);
  });

  test.each([
    [{ type: ['post'] }, true],
    [{ type: ['page'] }, false],
    [{ type: [] }, false],
    [{ uri: ['https://ex.com/a'] }, true],
    [{ language: ['EN'] }, true],
    [{ language: ['de'] }, false],
    [{ metadata: { tags: ['b'] } }, true],
    [{ metadata: { tags: ['z'] } }, false],
    [{ metadata: { missing: ['x'] } }, false],
    [{ created_at: { gte: '2024-01-15T00:00:00Z', lte: '2024-01-15T00:00:00Z' } }, true],
    [{ created_at: { gte: '2024-01-15T01:00:00+01:00' } }, true],
    [{ created_at: { gt: undefined, lte: '2024-01-14T23:59:59Z' } }, false],
    [{ modified_at: { gte: '2000-01-01T00:00:00Z' } }, false],
    [{ modified_at: {} }, true],
  ])('%j → %s', (ceiling, expected) => {
    expect(documentWithinCeiling(doc, ceiling as never)).toBe(expected);
  });
});
