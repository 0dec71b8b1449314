/**
 * What the entity features cost per delivery: `receiver.handle()` with reconciliation's records
 * off and on (`recordEntities`), and with the ordering guard off and on (`latestOnly`), the
 * variants alternating in one process, fastest of 7 rounds each; CPU µs per delivery, and each
 * variant's speed against the plain receiver. Every delivery is about an entity of its own (a
 * new user, a new invoice), so each records it: the worst case, one claim and one completion more.
 *
 * Run: `node --expose-gc --import tsx bench/entity-ab.ts` (memoryStore), and with `--redis` on
 * redisStore (`REDIS_URL`, default redis://127.0.0.1:6379; fewer deliveries per round).
 * @module
 */

import { createHmac } from 'node:crypto';
import process from 'node:process';
import { Redis } from 'ioredis';
import { createReceiver, type Receiver } from '../src/index.js';
import { redisStore } from '../src/stores/redis.js';
import { memoryStore } from '../src/stores/memory.js';
import type { IdempotencyStore } from '../src/stores/types.js';
import { loadFixture, randomTag, SECRET, type BodyKind } from './bodies.js';
import { cpuMicros } from './measure.js';

const ON_REDIS = process.argv.includes('--redis');
const PER_ROUND = ON_REDIS ? 2_000 : 20_000;
const ROUNDS = 7;

/** The variants: what the receiver does beside the plain run. */
const VARIANTS = {
  plain: { recordEntities: false, latestOnly: false },
  records: { recordEntities: true, latestOnly: false },
  latestOnly: { recordEntities: false, latestOnly: true },
  both: { recordEntities: true, latestOnly: true },
} as const;
type Variant = keyof typeof VARIANTS;

const redis = ON_REDIS ? new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379') : undefined;

function storeOf(): IdempotencyStore {
  return redis === undefined
    ? memoryStore({ max: 2 * ROUNDS * PER_ROUND })
    : redisStore({ client: redis, prefix: `schoolhooks-bench-entity:${randomTag()}:` });
}

function receiverOf(variant: Variant): Receiver {
  const { recordEntities, latestOnly } = VARIANTS[variant];
  const receiver = createReceiver({
    secret: SECRET,
    logger: false,
    store: storeOf(),
    recordEntities,
  });
  return receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {}, { latestOnly });
}

/** `count` signed deliveries of the fixture, each about an entity of its own. */
function deliveries(
  kind: BodyKind,
  count: number,
): { headers: Record<string, string>; body: Buffer }[] {
  const fixture = loadFixture(kind);
  const tag = randomTag();
  const base = Number.parseInt(tag.slice(0, 6), 16) * 1_000_000;
  return Array.from({ length: count }, (_, n) => {
    const data = structuredClone(fixture['data']) as Record<string, Record<string, unknown>>;
    // The entity's id: the user's (UserSignedUp) or the invoice's (PaymentCompleted).
    if (kind === 'small') data['user']!['id'] = base + n;
    else (data['payment']!['invoice'] as Record<string, unknown>)['id'] = base + n;
    const envelope = {
      ...fixture,
      timestamp: new Date().toISOString(),
      idempotencyKey: `${tag}-${n}`,
      data,
    };
    const body = Buffer.from(JSON.stringify(envelope));
    const signature = createHmac('sha256', SECRET).update(body).digest('hex');
    return { headers: { 'content-type': 'application/json', signature }, body };
  });
}

async function round(receiver: Receiver, kind: BodyKind): Promise<number> {
  const requests = deliveries(kind, PER_ROUND).map((request) => ({ method: 'POST', ...request }));
  const started = process.cpuUsage();
  for (const request of requests) {
    const result = await receiver.handle(request);
    if (result.outcome !== 'processed') throw new Error(`unexpected ${result.outcome}`);
  }
  return cpuMicros(started) / PER_ROUND;
}

console.log(`store: ${ON_REDIS ? 'redisStore' : 'memoryStore'}, ${PER_ROUND} deliveries per round`);
for (const kind of ['small', 'large'] as const) {
  const names = Object.keys(VARIANTS) as Variant[];
  const receivers = new Map(names.map((name) => [name, receiverOf(name)]));
  const best = new Map(names.map((name) => [name, Infinity]));
  for (let i = 0; i < ROUNDS; i++) {
    for (const name of names) {
      best.set(name, Math.min(best.get(name)!, await round(receivers.get(name)!, kind)));
    }
  }
  const plain = best.get('plain')!;
  const parts = names.map(
    (name) => `${name} ${best.get(name)!.toFixed(2)} µs (${(plain / best.get(name)!).toFixed(3)})`,
  );
  console.log(`${kind}: ${parts.join(', ')}`);
}
redis?.disconnect();
