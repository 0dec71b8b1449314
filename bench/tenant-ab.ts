/**
 * `receiver.handle()` with a static secret against the same with a secret looked up per tenant
 * (async, cached after the first delivery): CPU µs per delivery, the two alternating in one
 * process, fastest of 7 rounds each. The goal: the lookup within 0.95 of the static secret.
 *
 * Run: `node --expose-gc --import tsx bench/tenant-ab.ts`
 * @module
 */

import process from 'node:process';
import { createReceiver, type Receiver } from '../src/index.js';
import { bodyFactory, randomTag, SECRET, type BodyKind } from './bodies.js';
import { cpuMicros } from './measure.js';

const PER_ROUND = 20_000;
const ROUNDS = 7;

function receiverOf(lookup: boolean): Receiver {
  const secret = lookup
    ? async ({ tenant }: { tenant: string }) => (tenant === 'school' ? SECRET : undefined)
    : SECRET;
  return createReceiver({ secret, logger: false }).on(
    ['UserSignedUp', 'PaymentCompleted'],
    async () => {},
  );
}

async function round(
  receiver: Receiver,
  kind: BodyKind,
  tenant: string | undefined,
): Promise<number> {
  const { make } = bodyFactory(kind, randomTag());
  const requests = Array.from({ length: PER_ROUND }, (_, n) => {
    const { body, signature } = make(n);
    return {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature },
      body,
      tenant,
    };
  });
  const started = process.cpuUsage();
  for (const request of requests) {
    const result = await receiver.handle(request);
    if (result.outcome !== 'processed') throw new Error(`unexpected ${result.outcome}`);
  }
  return cpuMicros(started) / PER_ROUND;
}

for (const kind of ['small', 'large'] as const) {
  const fixed = receiverOf(false);
  const looked = receiverOf(true);
  const best = { fixed: Infinity, looked: Infinity };
  for (let i = 0; i < ROUNDS; i++) {
    best.fixed = Math.min(best.fixed, await round(fixed, kind, undefined));
    best.looked = Math.min(best.looked, await round(looked, kind, 'school'));
  }
  console.log(
    `${kind}: static ${best.fixed.toFixed(2)} µs, tenant lookup (cached) ${best.looked.toFixed(2)} µs per handle(); ` +
      `lookup / static speed ${(best.fixed / best.looked).toFixed(3)}`,
  );
}
