/** Runs `fn(i)` for i in [0, n) with at most `limit` in flight; the answers in order (the bench and the drill). */
export async function pool<T>(n: number, limit: number, fn: (i: number) => Promise<T>): Promise<T[]> {
  const out = new Array<T>(n);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, n) }, async () => {
    for (;;) {
      const i = next++;
      if (i >= n) return;
      out[i] = await fn(i);
    }
  });
  await Promise.all(lanes);
  return out;
}
