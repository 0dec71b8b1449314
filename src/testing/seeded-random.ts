/**
 * A small seedable random source, so a run with injected faults can be repeated exactly.
 * @module
 */

/**
 * A random number generator in [0, 1) from a 32-bit seed (mulberry32): fast, with a period of
 * 2^32, and the same sequence for the same seed on every machine. Not for anything secret.
 *
 * @example
 * ```ts
 * const random = seededRandom(42);
 * const fault = random() < 0.3;
 * ```
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return function next() {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
