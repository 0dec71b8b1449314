import { createServer } from 'node:http';
import { createReceiver } from '../src/receiver.js';
import { nodeListener } from '../adapters/node.js';
import { bodyFactory, randomTag, SECRET, type BodyKind } from './bodies.js';
const kind = (process.argv[2] ?? 'small') as BodyKind;
const rounds = Number(process.argv[3] ?? 12);
const per = Number(process.env.PER ?? 20_000);
const count = per * (rounds + 1);
const factory = bodyFactory(kind, randomTag());
const pool = Array.from({ length: count }, (_, i) => factory.make(i));
const receiver = createReceiver({ secret: SECRET });
receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {});
void createServer; void nodeListener;
let next = 0;
async function conn(to: number) {
  while (next < to) {
    const { body, signature } = pool[next++]!;
    const r = await receiver.handle({ method: 'POST', headers: { 'content-type': 'application/json', signature }, body });
    if (r.outcome !== 'processed') throw new Error(r.outcome);
  }
}
const results: number[] = [];
for (let round = 0; round <= rounds; round++) {
  const to = next + per;
  const from = next;
  const cpu = process.cpuUsage();
  await Promise.all(Array.from({ length: 10 }, () => conn(to)));
  const used = process.cpuUsage(cpu);
  if (round > 0) results.push((used.user + used.system) / (to - from));
}
results.sort((a, b) => a - b);
console.log(kind, 'min', results[0]!.toFixed(2), 'median', results[results.length >> 1]!.toFixed(2));
