/**
 * The two measures every bench process shares: CPU time, and the median.
 * @module
 */

import process from 'node:process';

/**
 * CPU time (user + system) of this process since `since`, in µs. Every figure is CPU time per
 * operation, not wall time: the machines this runs on are shared, and a process waiting for the
 * core is not slower code. On an idle core the two agree.
 */
export function cpuMicros(since: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(since);
  return user + system;
}

/** The median of `values` (the mean of the middle two for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}
