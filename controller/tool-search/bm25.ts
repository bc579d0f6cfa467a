/** A small Okapi BM25 index over short documents (tool names, descriptions, parameter names). */

/** A document to index: an id and its fields' text (a field may repeat to weigh it more). */
export interface Bm25Document {
  id: string;
  text: string;
}

/** One ranked hit. */
export interface Bm25Hit {
  id: string;
  score: number;
}

/** A built index. */
export interface Bm25Index {
  /** The documents matching at least one query term, best first (ties in index order). */
  search(query: string, limit?: number): Bm25Hit[];
}

/**
 * Splits text into lowercase terms: camelCase and snake_case words split apart, punctuation
 * dropped, so `deferred_lookup` and `deferredLookup` both give `deferred`, `lookup`.
 */
export function tokenize(text: string): string[] {
  return text
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter((term) => term.length > 0);
}

/** Builds a BM25 index (k1 = 1.2, b = 0.75 by default). */
export function createBm25Index(documents: Bm25Document[], options: { k1?: number; b?: number } = {}): Bm25Index {
  const k1 = options.k1 ?? 1.2;
  const b = options.b ?? 0.75;
  const termCounts = documents.map((document) => {
    const counts = new Map<string, number>();
    const terms = tokenize(document.text);
    for (const term of terms) counts.set(term, (counts.get(term) ?? 0) + 1);
    return { id: document.id, counts, length: terms.length };
  });
  const averageLength = termCounts.reduce((sum, document) => sum + document.length, 0) / Math.max(1, termCounts.length);
  const documentFrequency = new Map<string, number>();
  for (const document of termCounts) {
    for (const term of document.counts.keys()) documentFrequency.set(term, (documentFrequency.get(term) ?? 0) + 1);
  }
  const total = termCounts.length;
  const idf = (term: string) => {
    const frequency = documentFrequency.get(term) ?? 0;
    return Math.log(1 + (total - frequency + 0.5) / (frequency + 0.5));
  };
  return {
    search(query, limit = Number.POSITIVE_INFINITY) {
      const terms = [...new Set(tokenize(query))];
      const hits: Array<Bm25Hit & { index: number }> = [];
      termCounts.forEach((document, index) => {
        let score = 0;
        for (const term of terms) {
          const count = document.counts.get(term);
          if (!count) continue;
          const norm = count + k1 * (1 - b + (b * document.length) / (averageLength || 1));
          score += idf(term) * ((count * (k1 + 1)) / norm);
        }
        if (score > 0) hits.push({ id: document.id, score, index });
      });
      hits.sort((left, right) => right.score - left.score || left.index - right.index);
      return hits.slice(0, limit).map(({ id, score }) => ({ id, score }));
    },
  };
}
