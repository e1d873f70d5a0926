import { reciprocalRankFusion, RRF_K } from '../../../src/search/rrf';

describe('reciprocalRankFusion', () => {
  test('sums 1/(k + rank) over the lists', () => {
    const fused = reciprocalRankFusion([['a', 'b', 'c'], ['c', 'a']]);
    const score = (id: string) => fused.find((f) => f.id === id)!.score;
    expect(score('a')).toBeCloseTo(1 / (RRF_K + 1) + 1 / (RRF_K + 2));
    expect(score('b')).toBeCloseTo(1 / (RRF_K + 2));
    expect(score('c')).toBeCloseTo(1 / (RRF_K + 3) + 1 / (RRF_K + 1));
    expect(fused.map((f) => f.id)).toEqual(['a', 'c', 'b']);
    expect(fused[0]!.ranks).toEqual([1, 2]);
  });

  test('a document in both lists beats one ranked first by a single list', () => {
    expect(reciprocalRankFusion([['solo', 'both'], ['both']]).map((f) => f.id)).toEqual(['both', 'solo']);
  });

  test('ties are broken deterministically by best single rank, then list order', () => {
    expect(reciprocalRankFusion([['x'], ['y']]).map((f) => f.id)).toEqual(['x', 'y']);
    expect(reciprocalRankFusion([['y'], ['x']]).map((f) => f.id)).toEqual(['y', 'x']);
  });

  test('a duplicate id within one list counts once; empty input gives nothing', () => {
    const [only] = reciprocalRankFusion([['a', 'a']]);
    expect(only!.score).toBeCloseTo(1 / (RRF_K + 1));
    expect(reciprocalRankFusion([[], []])).toEqual([]);
  });
});
