/**
 * Work through a list a few items at a time, as a flood of concurrent clients does.
 * @module
 */

/** Run `run` for each of `items`, at most `limit` at a time, in their order. */
export async function inParallel<T>(
  items: readonly T[],
  limit: number,
  run: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) await run(items[next++] as T);
    }),
  );
}
