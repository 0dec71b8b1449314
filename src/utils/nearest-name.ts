/**
 * "Did you mean": the known name nearest to a mistyped one, for every place that refuses a name
 * (a CLI command, option or event name).
 * @module
 */

/**
 * The candidate nearest to `input`, or `undefined` when none is near enough to be the one meant.
 * Case is ignored (`paymentcompleted` finds `PaymentCompleted`); otherwise a candidate is near
 * when a few characters added, removed, changed or swapped turn one into the other: at most one
 * in three of the input's characters, and never more than three.
 *
 * @example
 * ```ts
 * nearestName('PaymentComplete', ['PaymentCompleted', 'UserSignedUp']); // 'PaymentCompleted'
 * nearestName('zzz', ['PaymentCompleted']); // undefined
 * ```
 */
export function nearestName(input: string, candidates: Iterable<string>): string | undefined {
  const wanted = input.toLowerCase();
  const allowed = Math.min(3, Math.max(1, Math.floor(wanted.length / 3)));
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of candidates) {
    const distance = editDistance(wanted, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return bestDistance <= allowed ? best : undefined;
}

/** `; did you mean X?` for a message, or nothing when no name is near. */
export function didYouMean(input: string, candidates: Iterable<string>): string {
  const near = nearestName(input, candidates);
  return near === undefined ? '' : `; did you mean ${near}?`;
}

/**
 * Optimal string alignment distance: insertions, deletions, substitutions and transpositions of
 * two neighbours each cost one.
 */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    const row: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        row.push(j);
        continue;
      }
      const above = rows[i - 1]!;
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(above[j]! + 1, row[j - 1]! + 1, above[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        value = Math.min(value, rows[i - 2]![j - 2]! + 1);
      }
      row.push(value);
    }
    rows.push(row);
  }
  return rows[a.length]![b.length]!;
}
