/**
 * Reciprocal rank fusion (Cormack et al., 2009): each ranked list contributes
 * 1 / (k + rank) to a document's score, ranks starting at 1. Computed here because
 * Elasticsearch's own RRF retriever needs a paid licence. k = 60 is the paper's value.
 */
export const RRF_K = 60;

export interface FusedItem {
  id: string;
  score: number;
  /** 1-based rank in each input list, undefined where absent. */
  ranks: (number | undefined)[];
}

export function reciprocalRankFusion(lists: string[][], k = RRF_K): FusedItem[] {
  const fused = new Map<string, FusedItem>();
  lists.forEach((list, listIndex) => {
    list.forEach((id, position) => {
      let item = fused.get(id);
      if (!item) {
        item = { id, score: 0, ranks: new Array(lists.length).fill(undefined) };
        fused.set(id, item);
      }
      if (item.ranks[listIndex] !== undefined) return; // a list naming an id twice counts once
      item.ranks[listIndex] = position + 1;
      item.score += 1 / (k + position + 1);
    });
  });
  // Ties (equal sums) go to the better single rank, then the earlier list, then the id: deterministic.
  const best = (item: FusedItem) => Math.min(...item.ranks.map((r) => r ?? Infinity));
  return [...fused.values()].sort((a, b) => b.score - a.score || best(a) - best(b) || firstList(a) - firstList(b) || (a.id < b.id ? -1 : 1));
}

const firstList = (item: FusedItem) => {
  const i = item.ranks.findIndex((r) => r !== undefined);
  return i === -1 ? Infinity : i;
};
