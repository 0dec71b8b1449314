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
 * The hash is node:crypto's: every caller (the Redis and Postgres stores, the BullMQ and pg-boss
 * inboxes) runs where ioredis or pg runs, which has node:crypto; none of them is in the core that
 * Workers load.
 * @module
 */

import { createHash } from 'node:crypto';
import { UNSTORABLE_CHARACTER } from '../keys/delivery-key.js';

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
  return STORAGE_KEY_MARKER + sha256Hex(key);
}

function isPlain(key: string): boolean {
  return (
    !key.startsWith(STORAGE_KEY_MARKER) &&
    !UNSTORABLE_CHARACTER.test(key) &&
    // At most 3 bytes of UTF-8 per code unit: only a long key needs counting (it is well-formed here).
    (key.length * 3 <= MAX_PLAIN_KEY_BYTES || Buffer.byteLength(key) <= MAX_PLAIN_KEY_BYTES)
  );
}

/** SHA-256 of the key's UTF-16 code units, little-endian (the string as it is, not its UTF-8). */
function sha256Hex(key: string): string {
  return createHash('sha256').update(Buffer.from(key, 'utf16le')).digest('hex');
}
