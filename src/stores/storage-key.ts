/**
 * The form in which an idempotency key (or a key derived from one) reaches a server: Redis,
 * PostgreSQL, BullMQ job ids, pg-boss job ids and rows.
 *
 * A key is a JavaScript string: UTF-16 code units, any of them. The servers store less:
 * - a lone surrogate (`"\ud800"` in the JSON, valid escape and valid UTF-8 bytes) has no UTF-8
 *   form, so ioredis and pg send U+FFFD in its place: `"a\ud800"` and `"a\udc00"` would be one
 *   key, and the second event would be answered `conflict` for ever;
 * - PostgreSQL refuses U+0000 in `text` and `jsonb`, on every attempt;
 * - a PostgreSQL btree entry holds about 2.7 kB, so a longer primary key is refused for ever.
 *
 * {@link storageKey} keeps every key that has none of these problems as it is (so the keys earlier
 * versions stored are still found after an upgrade) and writes any other as a marker and the
 * SHA-256 of its UTF-16 code units. No key that is kept as it is starts with the marker, so the
 * mapping is one-to-one (up to a SHA-256 collision): two different keys are never one key, and
 * every key can be stored. Logs, answers and errors keep showing the key as it was sent.
 *
 * The hash is computed here, synchronously, in plain JavaScript: the stores that call this run on
 * any runtime pg or ioredis runs on, with or without node:crypto, and the keys hashed are rare.
 * @module
 */

/**
 * What starts every key {@link storageKey} rewrites; a key that starts with it is rewritten too,
 * so a rewritten key never equals a key kept as it is.
 */
export const STORAGE_KEY_MARKER = '~sha256:';

/**
 * The most UTF-8 bytes a key kept as it is may have: well under PostgreSQL's limit of about
 * 2.7 kB for one btree entry (the primary key of `postgresStore`'s table).
 */
export const MAX_PLAIN_KEY_BYTES = 2048;

/** U+0000, or a surrogate that is not half of a pair (matched on code units: no `u` flag). */
const UNSTORABLE = /\0|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/**
 * The key as every store, queue and database keeps it faithfully: `key` itself when it is
 * well-formed UTF-16, has no U+0000, holds at most {@link MAX_PLAIN_KEY_BYTES} bytes of UTF-8
 * and does not start with {@link STORAGE_KEY_MARKER}; otherwise the marker and the lowercase hex
 * SHA-256 of its UTF-16 code units (little-endian). Different keys give different results.
 *
 * @example
 * ```ts
 * storageKey('8b0c6a4e-3f0e-4c43-9d59-2b7d0f1c9e11'); // the same string
 * storageKey('order-\ud800'); // '~sha256:' and 64 hex digits
 * ```
 */
export function storageKey(key: string): string {
  if (isPlain(key)) return key;
  return STORAGE_KEY_MARKER + sha256Hex(utf16Bytes(key));
}

function isPlain(key: string): boolean {
  return (
    !key.startsWith(STORAGE_KEY_MARKER) &&
    !UNSTORABLE.test(key) &&
    // At most 3 bytes of UTF-8 per code unit: only a long key needs counting.
    (key.length * 3 <= MAX_PLAIN_KEY_BYTES || utf8Length(key) <= MAX_PLAIN_KEY_BYTES)
  );
}

/** UTF-8 bytes of a well-formed string (a surrogate pair is 4, one of its halves 2). */
function utf8Length(key: string): number {
  let bytes = 0;
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    bytes += unit < 0x80 ? 1 : unit < 0x800 ? 2 : unit >= 0xd800 && unit <= 0xdfff ? 2 : 3;
  }
  return bytes;
}

/** Each code unit as two bytes, low byte first: one byte string per string, and back. */
function utf16Bytes(key: string): Uint8Array {
  const bytes = new Uint8Array(key.length * 2);
  for (let i = 0; i < key.length; i++) {
    const unit = key.charCodeAt(i);
    bytes[2 * i] = unit & 0xff;
    bytes[2 * i + 1] = unit >>> 8;
  }
  return bytes;
}

/** SHA-256's round constants (FIPS 180-4, 4.2.2). */
const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** SHA-256 (FIPS 180-4) of `message`, as lowercase hex. */
function sha256Hex(message: Uint8Array): string {
  // The message, a 1 bit, zeros, and its length in bits (64-bit big-endian): whole 64-byte blocks.
  const blocks = Math.ceil((message.length + 9) / 64);
  const padded = new Uint8Array(blocks * 64);
  padded.set(message);
  padded[message.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(padded.length - 8, Math.floor(message.length / 0x20000000));
  view.setUint32(padded.length - 4, (message.length * 8) >>> 0);

  const h = new Uint32Array([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  for (let offset = 0; offset < padded.length; offset += 64) {
    for (let t = 0; t < 16; t++) w[t] = view.getUint32(offset + 4 * t);
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15]!;
      const y = w[t - 2]!;
      const s0 = rotr(x, 7) ^ rotr(x, 18) ^ (x >>> 3);
      const s1 = rotr(y, 17) ^ rotr(y, 19) ^ (y >>> 10);
      w[t] = w[t - 16]! + s0 + w[t - 7]! + s1;
    }
    let a = h[0]!;
    let b = h[1]!;
    let c = h[2]!;
    let d = h[3]!;
    let e = h[4]!;
    let f = h[5]!;
    let g = h[6]!;
    let hh = h[7]!;
    for (let t = 0; t < 64; t++) {
      const t1 =
        (hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t]! + w[t]!) | 0;
      const t2 = ((rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h[0]! += a;
    h[1]! += b;
    h[2]! += c;
    h[3]! += d;
    h[4]! += e;
    h[5]! += f;
    h[6]! += g;
    h[7]! += hh;
  }
  let hex = '';
  for (const word of h) hex += word.toString(16).padStart(8, '0');
  return hex;
}

function rotr(x: number, n: number): number {
  return (x >>> n) | (x << (32 - n));
}
