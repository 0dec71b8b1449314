/**
 * Injected faults: which attempt suffers which, from a seedable random source.
 * @module
 */

import { ConfigError } from '../errors.js';
import { seededRandom } from './seeded-random.js';

/**
 * Faults the simulator can inject into an attempt:
 * - `drop`: the receiver gets the request and answers, but the platform never sees the answer;
 * - `delay`: the answer comes after the platform's timeout, so the platform counts a failure;
 * - `duplicate`: the request goes out twice at once (the second copy does not count);
 * - `reorder`: the request is held back up to a minute, so later events overtake it.
 */
export type FaultKind = 'drop' | 'delay' | 'duplicate' | 'reorder';

/** Every fault kind. */
export const FAULT_KINDS: readonly FaultKind[] = ['drop', 'delay', 'duplicate', 'reorder'];

/** Random faults: each attempt suffers one with probability `rate`, the kind picked evenly. */
export interface FaultOptions {
  /** Probability in [0, 1] that an attempt suffers a fault. */
  rate: number;
  /** The faults to pick from. Default: all four. */
  kinds?: readonly FaultKind[];
  /** Seed of the random source: the same seed gives the same faults. Default 1. */
  seed?: number;
}

/** Picks the fault of each attempt; `random` is the same source, for the sizes of faults. */
export interface FaultPicker {
  (): FaultKind | undefined;
  random: () => number;
}

/** The fault picker for `options`: no faults without options. */
export function faultPicker(options: FaultOptions | undefined): FaultPicker {
  const { rate = 0, kinds = FAULT_KINDS, seed = 1 } = options ?? {};
  if (!(rate >= 0 && rate <= 1)) throw new ConfigError('faults.rate must be between 0 and 1');
  if (kinds.length === 0 || kinds.some((kind) => !FAULT_KINDS.includes(kind))) {
    throw new ConfigError(`faults.kinds must be some of ${FAULT_KINDS.join(', ')}`);
  }
  const random = seededRandom(seed);
  const pick = () => {
    if (rate === 0 || random() >= rate) return undefined;
    return kinds[Math.floor(random() * kinds.length)];
  };
  return Object.assign(pick, { random });
}
