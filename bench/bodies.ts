/**
 * The signed bodies every benchmark sends: the UserSignedUp and PaymentCompleted fixtures,
 * compacted, each copy with its own idempotencyKey and a fresh timestamp.
 * @module
 */

import { createHmac } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HOUR } from '../src/platform/platform-contract.js';

/** A secret shaped like the platform's: 64 characters. */
export const SECRET = 'b7e4c1a09d3f5e2877c6b1a0e9d8f7c6b5a4e3d2c1b0a9f8e7d6c5b4a3f2e1d0';

/**
 * The receiver's options in every schoolhooks row, besides its store, inbox and telemetry: these
 * bodies' secret, and an hour for their timestamps and keys.
 */
export const BENCH_RECEIVER_OPTIONS = {
  secret: SECRET,
  // Short enough that what a run leaves in Redis expires on its own within the hour.
  maxEventAgeMs: HOUR,
  dedupTtlMs: HOUR,
} as const;

/** The two body sizes of the benchmark. */
export const BODY_KINDS = ['small', 'large'] as const;
export type BodyKind = (typeof BODY_KINDS)[number];

/** Which fixture each body size is. */
export const FIXTURE_OF: Record<BodyKind, string> = {
  small: 'UserSignedUp',
  large: 'PaymentCompleted',
};

/** fixtures/ of the repository: next to bench/ from source, or under the working directory once bundled. */
function fixturesDir(): string {
  const beside = fileURLToPath(new URL('../fixtures/', import.meta.url));
  return existsSync(beside) ? beside : join(process.cwd(), 'fixtures');
}

/** The fixture as a parsed object. */
export function loadFixture(kind: BodyKind): Record<string, unknown> {
  const file = join(fixturesDir(), `${FIXTURE_OF[kind]}.json`);
  return JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
}

/** One signed body. */
export interface SignedBody {
  body: Buffer;
  signature: string;
  idempotencyKey: string;
}

/**
 * Makes signed copies of one fixture: copy `n` carries key `<tag>-…-<n as 12 hex digits>`, as
 * long as the fixture's UUID, so every copy has the fixture's exact size.
 */
export function bodyFactory(
  kind: BodyKind,
  tag: string,
  secret = SECRET,
): { make(n: number): SignedBody; size: number } {
  const fixture = loadFixture(kind);
  // Each copy is about an entity of its own (a new user, a new invoice), as real deliveries are:
  // the receiver records each one for reconciliation, and two at once about one entity wait.
  const entityId = entityIdOf(fixture, kind);
  const timestamp = new Date().toISOString();
  // `tag` is 8 hex digits, so keys keep the UUID shape (and size) of the fixture's.
  const stem = `${tag.slice(0, 8).padEnd(8, '0')}-b3c4-4d5e-8f60-`;
  // The fixture serialised once around a placeholder key, so each copy costs a splice and an HMAC.
  const placeholder = '\u0000key\u0000';
  const [head, tail] = JSON.stringify({ ...fixture, timestamp, idempotencyKey: placeholder }).split(
    JSON.stringify(placeholder),
  ) as [string, string];
  const make = (n: number): SignedBody => {
    const idempotencyKey = stem + n.toString(16).padStart(12, '0');
    const text = `${head}"${idempotencyKey}"${tail}`;
    const body = Buffer.from(text.replace(ENTITY_MARK, entityId(n)));
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    return { body, signature, idempotencyKey };
  };
  return { make, size: make(0).body.byteLength };
}

/** Stands for the entity's id in the serialised fixture: a number no fixture holds. */
const ENTITY_MARK = '987654321012345';

/**
 * Puts {@link ENTITY_MARK} in place of the fixture's entity id (UserSignedUp's user, a
 * PaymentCompleted's invoice), and gives the id of copy `n`: as many digits as the fixture's, so
 * every copy keeps the fixture's size.
 */
function entityIdOf(fixture: Record<string, unknown>, kind: BodyKind): (n: number) => string {
  const data = fixture['data'] as Record<string, Record<string, unknown>>;
  const holder =
    kind === 'small' ? data['user']! : (data['payment']!['invoice'] as Record<string, unknown>);
  const digits = String(holder['id']).length;
  holder['id'] = Number(ENTITY_MARK);
  const first = 10 ** (digits - 1);
  return (n) => String(first + (n % (9 * first)));
}

/** A random 8-hex-digit tag, so two runs never share keys (the Redis store outlives a run). */
export function randomTag(): string {
  return Math.floor(Math.random() * 0xffffffff)
    .toString(16)
    .padStart(8, '0');
}
