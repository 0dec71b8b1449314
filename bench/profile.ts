/**
 * Profiles `receiver.handle()` in a tight loop on one body size, the bodies signed beforehand
 * and left out of the profile: `node --import tsx bench/profile.ts large 20000 [out.cpuprofile]`.
 * Prints the functions with the most self time.
 * @module
 */

import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createReceiver } from '../src/receiving/receiver.js';
import { BODY_KINDS, bodyFactory, randomTag, SECRET, type BodyKind } from './bodies.js';
import { formatTopSelfTime, topSelfTime } from './top-self-time.js';

const kind = (process.argv[2] ?? 'large') as BodyKind;
if (!BODY_KINDS.includes(kind))
  throw new Error(`body size must be one of ${BODY_KINDS.join(', ')}`);
const count = Number(process.argv[3] ?? 20_000);
const out = process.argv[4] ?? join(tmpdir(), `schoolhooks-handle-${kind}.cpuprofile`);

const factory = bodyFactory(kind, randomTag());
const pool = Array.from({ length: count }, (_, i) => factory.make(i));
const receiver = createReceiver({ secret: SECRET });
receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {});

async function run(from: number, to: number): Promise<void> {
  for (let i = from; i < to; i++) {
    const { body, signature } = pool[i]!;
    const result = await receiver.handle({
      method: 'POST',
      headers: { 'content-type': 'application/json', signature },
      body,
    });
    if (result.outcome !== 'processed') throw new Error(`handle() answered ${result.outcome}`);
  }
}

// Warm up (a fifth of the bodies), then profile the rest.
const warm = Math.floor(count / 5);
await run(0, warm);
const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.setSamplingInterval', { interval: 500 });
await session.post('Profiler.start');
const cpu = process.cpuUsage();
await run(warm, count);
const used = process.cpuUsage(cpu);
const { profile } = await session.post('Profiler.stop');
writeFileSync(out, JSON.stringify(profile));
const us = (used.user + used.system) / (count - warm);
console.log(
  `${kind}: ${us.toFixed(1)} CPU µs per handle(), ${Math.round(1e6 / us)} ops/s; profile in ${out}\n`,
);
console.log(formatTopSelfTime(topSelfTime(out, 30)));
