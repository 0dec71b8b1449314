/**
 * The fingerprint a completed key remembers, to tell a retry of the same event from a different
 * event that reuses its idempotencyKey.
 * @module
 */

/**
 * A 64-bit hash of the parsed envelope (16 hex digits), the same for every retry and every
 * endpoint of one event whatever whitespace or key order the platform uses on the wire.
 *
 * Two envelopes get the same fingerprint when their sorted-key serialisations are equal (what a
 * fast-json-stable-stringify + SHA-256 fingerprint decides), and different ones except with a
 * chance of about 2^-64. It is not a cryptographic hash and need not be: only a sender holding
 * the secret gets an envelope this far, and the fingerprint only tells a retry from a reused
 * idempotencyKey.
 *
 * Why not sort and hash: sorting the keys of every object, serialising and hashing cost about
 * three JSON.parse of the same body, on every processed event (bench/README.md). This walks the
 * parsed tree once and sums the entries of each object, a sum being the same in any key order.
 *
 * @example
 * ```ts
 * fingerprintEnvelope(JSON.parse('{"a":1,"b":[true]}')) === fingerprintEnvelope({ b: [true], a: 1 }); // true
 * ```
 */
export function fingerprintEnvelope(envelope: unknown): string {
  // for...in also visits enumerable properties added to Object.prototype (by some library);
  // JSON.parse makes own properties only, so look once per call, not once per key.
  ownOnly = false;
  for (const _ in Object.prototype) {
    ownOnly = true;
    break;
  }
  hashValue(envelope);
  return hex(lanes[A]!, lanes[B]!);
}

// The two 32-bit lanes of the hash of the value last hashed. A typed array rather than returned
// numbers or module variables, which box every int32 beyond the small-integer range into a heap
// number. The walk is synchronous, so nothing interleaves.
const lanes = new Int32Array(2);
const A = 0;
const B = 1;
let ownOnly = false;

const float = new Float64Array(1);
const words = new Int32Array(float.buffer);

/**
 * The lanes of each key name. Payloads reuse a few hundred names (interned by JSON.parse, so a
 * lookup is cheap); bounded in case a sender varies them.
 */
const keyLanes = new Map<string, Int32Array>();
const KEY_CACHE_LIMIT = 4096;

// Distinct seeds per kind, so that e.g. "1" and 1, [] and {}, or a key and a value differ.
const STRING_A = 0x2f7c_1a33;
const STRING_B = 0x6ad9_e4c5;
const KEY_A = 0x4b65_7931;
const KEY_B = 0x6b45_7932;
const NUMBER_A = 0x1b87_3593;
const NUMBER_B = 0x5f35_6495;
const ARRAY_A = 0x3c6e_f372;
const ARRAY_B = 0x7a5e_1f29;
const OBJECT_A = 0x0d9b_2c41;
const OBJECT_B = 0x4b2f_c8e7;
const NULL_A = 0x6e75_6c6c;
const NULL_B = 0x4e55_4c4c;

function hashValue(value: unknown): void {
  if (typeof value === 'string') {
    hashString(value, STRING_A, STRING_B);
  } else if (typeof value === 'number') {
    // The bits of the double: 1, 1.0 and 1e0 on the wire are one number; -0 counts as 0.
    float[0] = value === 0 ? 0 : value;
    const low = words[0]!;
    const high = words[1]!;
    lanes[A] = mix(mix(low ^ NUMBER_A) + high);
    lanes[B] = mix(mix(high ^ NUMBER_B) + low);
  } else if (typeof value === 'object' && value !== null) {
    if (Array.isArray(value)) hashArray(value);
    else hashObject(value as Record<string, unknown>);
  } else if (typeof value === 'boolean') {
    lanes[A] = value ? 0x7472_7565 : 0x6661_6c73;
    lanes[B] = value ? 0x5452_5545 : 0x4641_4c53;
  } else {
    // null, and what JSON.parse never makes.
    lanes[A] = NULL_A;
    lanes[B] = NULL_B;
  }
}

/** Items in order: each step is a bijection of the state, so any one changed item shows. */
function hashArray(items: readonly unknown[]): void {
  let a = ARRAY_A ^ items.length;
  let b = ARRAY_B ^ Math.imul(items.length, 0x9e37_79b1);
  for (let i = 0; i < items.length; i++) {
    hashValue(items[i]);
    a = mix(a + lanes[A]!);
    b = mix(b ^ lanes[B]!);
  }
  lanes[A] = a;
  lanes[B] = b;
}

/**
 * Entries in any order: each entry mixes its key's lanes into its value's (a bijection of the
 * value's lanes for a given key), and the entries are summed, the same sum in every key order.
 */
function hashObject(object: Record<string, unknown>): void {
  let a = 0;
  let b = 0;
  let count = 0;
  for (const key in object) {
    if (ownOnly && !Object.hasOwn(object, key)) continue;
    // The key first: hashing a new key name overwrites the lanes.
    const name = keyLanes.get(key) ?? hashKey(key);
    hashValue(object[key]);
    a = (a + mix(Math.imul(lanes[A]! ^ name[A]!, 0x9e37_79b1) ^ name[B]!)) | 0;
    b = (b + mix(Math.imul(lanes[B]! + name[B]!, 0x85eb_ca77) ^ name[A]!)) | 0;
    count++;
  }
  lanes[A] = mix(a ^ OBJECT_A ^ count);
  lanes[B] = mix(b ^ OBJECT_B ^ Math.imul(count, 0x85eb_ca77));
}

function hashKey(key: string): Int32Array {
  hashString(key, KEY_A, KEY_B);
  const name = lanes.slice();
  if (keyLanes.size < KEY_CACHE_LIMIT) keyLanes.set(key, name);
  return name;
}

/**
 * Two lanes over the UTF-16 code units, two units per step. Each step is a bijection of each
 * lane's state, so strings of one length that differ anywhere always hash differently.
 */
function hashString(text: string, seedA: number, seedB: number): void {
  let a = seedA;
  let b = seedB;
  const length = text.length;
  let i = 0;
  for (; i + 1 < length; i += 2) {
    const word = text.charCodeAt(i) | (text.charCodeAt(i + 1) << 16);
    a = Math.imul(a ^ word, 0x9e37_79b1);
    a ^= a >>> 15;
    b = Math.imul(b ^ word, 0x85eb_ca77);
    b ^= b >>> 13;
  }
  if (i < length) {
    const unit = text.charCodeAt(i);
    a = Math.imul(a ^ unit, 0x9e37_79b1);
    a ^= a >>> 15;
    b = Math.imul(b ^ unit, 0x85eb_ca77);
    b ^= b >>> 13;
  }
  lanes[A] = mix(a ^ length);
  lanes[B] = mix(b + Math.imul(length, 0xc2b2_ae3d));
}

/** A 32-bit finaliser with full avalanche (a bijection: distinct inputs stay distinct). */
function mix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85eb_ca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2_ae35);
  return h ^ (h >>> 16);
}

const HEX_DIGITS = Array.from('0123456789abcdef', (digit) => digit.charCodeAt(0));

/** 16 hex digits of two lanes, as one flat string (the store keeps it for days). */
function hex(a: number, b: number): string {
  const d = HEX_DIGITS;
  return String.fromCharCode(
    d[(a >>> 28) & 15]!,
    d[(a >>> 24) & 15]!,
    d[(a >>> 20) & 15]!,
    d[(a >>> 16) & 15]!,
    d[(a >>> 12) & 15]!,
    d[(a >>> 8) & 15]!,
    d[(a >>> 4) & 15]!,
    d[a & 15]!,
    d[(b >>> 28) & 15]!,
    d[(b >>> 24) & 15]!,
    d[(b >>> 20) & 15]!,
    d[(b >>> 16) & 15]!,
    d[(b >>> 12) & 15]!,
    d[(b >>> 8) & 15]!,
    d[(b >>> 4) & 15]!,
    d[b & 15]!,
  );
}
