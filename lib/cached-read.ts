/**
 * A read shared by its callers and reused for `cacheMs` after it settles: the metric
 * families of one scrape collect at once and share the pending read, so 0 still means one
 * read per scrape. A failed read is not reused: the next call reads again.
 */
export function cachedRead<T>(load: () => Promise<T>, cacheMs: number): () => Promise<T> {
  let cached: { at: number; p: Promise<T>; settled?: boolean } | undefined;
  return () => {
    if (!cached || (cached.settled && Date.now() - cached.at >= cacheMs)) {
      const mine: { at: number; p: Promise<T>; settled?: boolean } = { at: Date.now(), p: load() };
      cached = mine;
      mine.p.then(
        () => {
          mine.settled = true;
        },
        () => {
          if (cached === mine) cached = undefined;
        },
      );
    }
    return cached.p;
  };
}
