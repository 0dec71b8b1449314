/**
 * The measuring half of `bench/builds-ab.ts` (which bundles and starts it): two builds' receivers
 * in this one process, `receiver.handle()` over the same signed bodies in alternating rounds, CPU µs
 * per delivery. Arguments: the baseline bundle, this checkout's bundle, then a JSON of the settings
 * (`ABSettings`, below).
 * @module
 */

import process from 'node:process';
import { Redis } from 'ioredis';
import {
  BENCH_RECEIVER_OPTIONS,
  bodyFactory,
  randomTag,
  type BodyKind,
  type SignedBody,
} from './bodies.js';
import { cpuMicros, median } from './measure.js';

/** What one run measures. */
export interface ABSettings {
  kind: BodyKind;
  /** Deliveries each build handles per round. */
  deliveries: number;
  rounds: number;
  store: 'memory' | 'redis';
  /** Receiver options given to both builds (`recordEntities`, `watch`…). */
  options: Record<string, unknown>;
  /** Receiver options for this checkout's build only, over `options`. */
  optionsB: Record<string, unknown>;
  /** The body given as bytes (false) or, as every adapter gives it, as a reader of them (true). */
  reader: boolean;
}

/** What a build's bundle exports (its entry is written by builds-ab.ts). */
interface Build {
  createReceiver(options: unknown): BuildReceiver;
  memoryStore(): unknown;
  redisStore(options: unknown): unknown;
}

interface BuildReceiver {
  on(names: readonly string[], handler: () => Promise<void>): void;
  handle(request: unknown): Promise<{ outcome: string }>;
}

const [baselineFile, currentFile, json] = process.argv.slice(2);
if (baselineFile === undefined || currentFile === undefined || json === undefined) {
  throw new Error('usage: builds-ab-run.mjs <baseline bundle> <this bundle> <settings JSON>');
}
const settings = JSON.parse(json) as ABSettings;
const builds = [
  (await import(baselineFile)) as Build,
  (await import(currentFile)) as Build,
] as const;
const clients: Redis[] = [];

/** A receiver of `build` with a handler on both bench events, on a store of its own. */
function receiverOf(build: Build, options: Record<string, unknown>): BuildReceiver {
  let store: unknown;
  if (settings.store === 'redis') {
    const client = new Redis(process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379');
    clients.push(client);
    // A namespace of its own per run: nothing read back from an earlier one; keys expire in the hour.
    store = build.redisStore({ client, prefix: 'schoolhooks-bench-ab', namespace: randomTag() });
  } else store = build.memoryStore();
  const receiver = build.createReceiver({ ...BENCH_RECEIVER_OPTIONS, ...options, store });
  receiver.on(['UserSignedUp', 'PaymentCompleted'], async () => {});
  return receiver;
}

/** CPU µs per delivery of `receiver` over `pool`, one delivery after the other. */
async function cpuPerDelivery(
  receiver: BuildReceiver,
  pool: readonly SignedBody[],
): Promise<number> {
  const started = process.cpuUsage();
  for (const { body, signature } of pool) {
    const result = await receiver.handle({
      method: 'POST',
      headers: { 'content-type': 'application/json', signature },
      body: settings.reader ? () => Promise.resolve(body) : body,
    });
    if (result.outcome !== 'processed') throw new Error(`handle() answered ${result.outcome}`);
  }
  return cpuMicros(started) / pool.length;
}

const receivers = [
  receiverOf(builds[0], settings.options),
  receiverOf(builds[1], { ...settings.options, ...settings.optionsB }),
] as const;
const factory = bodyFactory(settings.kind, randomTag());
let made = 0;
const ratios: number[] = [];
const costs: [number[], number[]] = [[], []];
// Round 0 warms both up and is not counted; each round both builds handle the same bodies (each in
// its own store), in turns that swap every round.
for (let round = 0; round <= settings.rounds; round++) {
  const pool = Array.from({ length: settings.deliveries }, () => factory.make(made++));
  const order = round % 2 === 0 ? [0, 1] : [1, 0];
  const cost: number[] = [];
  for (const which of order) cost[which] = await cpuPerDelivery(receivers[which]!, pool);
  if (round === 0) continue;
  costs[0].push(cost[0]!);
  costs[1].push(cost[1]!);
  ratios.push(cost[1]! / cost[0]!);
}
await Promise.all(clients.map((client) => client.quit()));
const spread = `${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}`;
console.log(
  `${settings.kind}, ${settings.store}Store: baseline ${median(costs[0]).toFixed(2)} µs, ` +
    `this build ${median(costs[1]).toFixed(2)} µs a delivery; this ÷ baseline CPU ` +
    `${median(ratios).toFixed(3)} (median of ${ratios.length} rounds, ${spread})`,
);
