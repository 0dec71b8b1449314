/**
 * In-process costs: `receiver.handle()` ops/s per body size, each step of the pipeline on its own
 * (verify, parse, validate, dedup, and what is left: dispatch and glue), and the heap a
 * memoryStore needs for 100 000 completed keys.
 *
 * Run alone: `node --expose-gc --import tsx bench/in-process.ts` (add `--json` for one JSON line).
 * @module
 */

import { createHash, createHmac, randomUUID } from 'node:crypto';
import stableStringify from 'fast-json-stable-stringify';
import {
  eventDataSchemas,
  isFixedContractEvent,
  validateEventData,
  parseEnvelope,
} from '../src/platform/events/index.js';
import { createReceiver } from '../src/receiving/receiver.js';
import { createVerifier } from '../src/platform/signature.js';
import { memoryStore } from '../src/stores/memory.js';
import { BODY_KINDS, bodyFactory, randomTag, SECRET, type BodyKind } from './bodies.js';
import { cpuMicros } from './measure.js';
import { RECEIVER_DEFAULTS } from '../src/defaults.js';

const QUICK = process.env.BENCH_QUICK === '1';
/** Distinct bodies each step cycles through. */
const DISTINCT = 2000;
/** How long each measurement runs. */
const MEASURE_MS = QUICK ? 300 : 1000;

/** µs per operation of each step, and handle() ops/s, for one body size. */
export interface StepCosts {
  kind: BodyKind;
  bytes: number;
  handleOpsPerSec: number;
  /** verify + parse alone, what the hand-written receiver (a) does: the ceiling for handle(). */
  floorOpsPerSec: number;
  handleUs: number;
  verifyUs: number;
  parseUs: number;
  /** The receiver's validation: the generated validator (Zod only for a payload that fails it). */
  validateUs: number;
  /** What validation cost with Zod's safeParse on every payload, for comparison. */
  zodUs: number;
  /**
   * What a fingerprint of the parsed envelope would cost (fast-json-stable-stringify + SHA-256),
   * for comparison: the receiver's fingerprint is the HMAC verification computes, so costs nothing.
   */
  sortedSha256Us: number;
  storeUs: number;
  /** handle() minus the steps above: dispatch (handlers, timeout, abort signal) and glue. */
  dispatchUs: number;
}

export interface InProcessResult {
  steps: StepCosts[];
  heap: { keys: number; bytes: number; bytesPerKey: number };
}

/** Rounds per measurement; the fastest round is kept (the others met more interference). */
const ROUNDS = 5;

/** Runs `op` (after a warm-up) in rounds of about `ms / ROUNDS`; CPU µs per call. */
function timeSync(op: (i: number) => unknown, ms = MEASURE_MS): number {
  for (let i = 0; i < 3000; i++) op(i);
  let best = Infinity;
  let n = 0;
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = process.cpuUsage();
    const end = performance.now() + ms / ROUNDS;
    let count = 0;
    while (performance.now() < end) {
      for (let i = 0; i < 200; i++) op(n++);
      count += 200;
    }
    best = Math.min(best, cpuMicros(cpu) / count);
  }
  return best;
}

/** {@link timeSync} for an async `op`, awaited one at a time; at most `limit` calls in all. */
async function timeAsync(
  op: (i: number) => Promise<unknown>,
  ms = MEASURE_MS,
  limit = Infinity,
  warmup = 3000,
): Promise<number> {
  let n = 0;
  while (n < warmup) await op(n++);
  const perRound = (limit - warmup) / ROUNDS;
  let best = Infinity;
  for (let round = 0; round < ROUNDS; round++) {
    const cpu = process.cpuUsage();
    const end = performance.now() + ms / ROUNDS;
    let count = 0;
    while (performance.now() < end && count < perRound) {
      for (let i = 0; i < 50 && count < perRound; i++, count++) await op(n++);
    }
    best = Math.min(best, cpuMicros(cpu) / count);
  }
  return best;
}

async function measureKind(kind: BodyKind): Promise<StepCosts> {
  const factory = bodyFactory(kind, randomTag());
  // Each step runs over a few thousand distinct bodies, as in a server, not over one hot copy.
  const bodies = Array.from({ length: DISTINCT }, (_, i) => factory.make(i));
  const envelopes = bodies.map(({ body }) => {
    const parsed = parseEnvelope(body);
    if (!parsed.ok) throw new Error(`the ${kind} fixture does not parse: ${parsed.reason}`);
    return parsed.envelope;
  });
  const name = envelopes[0]!.event;
  if (!isFixedContractEvent(name)) throw new Error(`${name} has no schema`);
  const schema = eventDataSchemas[name];
  if (!schema.safeParse(envelopes[0]!.data).success)
    throw new Error(`the ${kind} fixture is invalid`);
  const at = <T>(list: readonly T[], i: number): T => list[i % DISTINCT]!;

  const { verify } = createVerifier(SECRET);
  const verifyUs = timeSync((i) => verify(at(bodies, i).body, at(bodies, i).signature));
  const parseUs = timeSync((i) => parseEnvelope(at(bodies, i).body));
  const validateUs = timeSync((i) => {
    if (!validateEventData(name, at(envelopes, i).data).ok) throw new Error('invalid fixture');
  });
  const zodUs = timeSync((i) => schema.safeParse(at(envelopes, i).data));
  const fingerprint = String(await verify(bodies[0]!.body, bodies[0]!.signature));
  const sortedSha256Us = timeSync((i) =>
    createHash('sha256')
      .update(stableStringify(at(envelopes, i)))
      .digest('hex'),
  );

  const store = memoryStore();
  const keys = Array.from({ length: 50_000 }, () => randomUUID());
  const storeUs = await timeAsync(
    async (i) => {
      const key = keys[i % keys.length] + String(i);
      const claim = await store.claim({
        key,
        leaseMs: RECEIVER_DEFAULTS.leaseMs,
        completion: { fingerprint, ttlMs: RECEIVER_DEFAULTS.dedupTtlMs },
      });
      if (claim.state !== 'claimed') throw new Error('the store did not hand out a fresh key');
      await store.settle(claim, 'complete');
    },
    MEASURE_MS,
    keys.length * 4,
  );

  // The whole pipeline: a handler for the event, so it is validated, claimed, run and completed.
  const pool = Array.from(
    { length: kind === 'small' ? (QUICK ? 20_000 : 70_000) : 30_000 },
    (_, i) => factory.make(i + 1),
  );
  const receiver = createReceiver({ secret: SECRET });
  let handled = 0;
  // An async handler, as users write them (so the run races handlerTimeoutMs).
  receiver.on(name, async () => {
    handled++;
  });
  const request = async (i: number) => {
    const signed = pool[i]!;
    const result = await receiver.handle({
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: signed.signature },
      body: signed.body,
    });
    if (result.outcome !== 'processed') throw new Error(`handle() answered ${result.outcome}`);
  };
  const handleUs = await timeAsync(request, MEASURE_MS * 2, pool.length);
  if (handled === 0) throw new Error('the handler did not run');

  const dispatchUs = handleUs - verifyUs - parseUs - validateUs - storeUs;
  return {
    kind,
    bytes: factory.size,
    handleOpsPerSec: 1e6 / handleUs,
    floorOpsPerSec: 1e6 / (verifyUs + parseUs),
    handleUs,
    verifyUs,
    parseUs,
    validateUs,
    zodUs,
    sortedSha256Us,
    storeUs,
    dispatchUs,
  };
}

/** Heap of a memoryStore holding `count` completed keys, measured after full GCs. */
async function measureHeap(count = 100_000): Promise<InProcessResult['heap']> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  const settle = () => {
    for (let i = 0; i < 4; i++) gc();
    return process.memoryUsage().heapUsed;
  };
  const signatureOf = (body: string) => createHmac('sha256', SECRET).update(body).digest('hex');
  const { verify } = createVerifier(SECRET);
  const before = settle();
  const store = memoryStore({ max: count });
  for (let i = 0; i < count; i++) {
    // A fresh key and a real fingerprint per key, as the receiver stores them: the key is a flat
    // string from JSON.parse (randomUUID() alone returns a rope of a dozen pieces).
    const key = JSON.parse(`"${randomUUID()}"`) as string;
    const fingerprint = String(await verify(String(i), signatureOf(String(i))));
    const claim = await store.claim({
      key,
      leaseMs: RECEIVER_DEFAULTS.leaseMs,
      completion: { fingerprint, ttlMs: RECEIVER_DEFAULTS.dedupTtlMs },
    });
    if (claim.state !== 'claimed') throw new Error('claim failed');
    await store.settle(claim, 'complete');
  }
  const after = settle();
  // Keep the store alive until after the measurement.
  const probe = { key: randomUUID(), leaseMs: 1, completion: { fingerprint: '', ttlMs: 1 } };
  if ((await store.claim(probe)).state !== 'claimed') throw new Error('unreachable');
  const bytes = after - before;
  return { keys: count, bytes, bytesPerKey: bytes / count };
}

export async function runInProcess(): Promise<InProcessResult> {
  const steps: StepCosts[] = [];
  for (const kind of BODY_KINDS) steps.push(await measureKind(kind));
  const heap = await measureHeap();
  return { steps, heap };
}

/** The in-process table, as Markdown. */
export function formatInProcess({ steps, heap }: InProcessResult): string {
  const f = (us: number) => us.toFixed(1);
  const n = (x: number) => Math.round(x).toLocaleString('en-US');
  const lines = [
    'CPU µs per call (fastest of 5 rounds, over 2 000 distinct bodies); dedup = store (the fingerprint is the HMAC verify computes); ' +
      '"rest" = handle() minus the steps: dispatch (handlers, timeout timer, promises), GC, glue.',
    '',
    '| body | handle() ops/s | floor ops/s (verify + parse only) | handle() µs | verify | parse | validate | store | rest | Zod safeParse instead | a fingerprint of the parsed envelope (sorted JSON + SHA-256) |',
    '| - | -: | -: | -: | -: | -: | -: | -: | -: | -: | -: |',
    ...steps.map(
      (s) =>
        `| ${s.kind} (${s.bytes} B) | ${n(s.handleOpsPerSec)} | ${n(s.floorOpsPerSec)} | ${f(s.handleUs)} | ${f(s.verifyUs)} | ${f(s.parseUs)} | ${f(s.validateUs)} | ${f(s.storeUs)} | ${f(s.dispatchUs)} | ${f(s.zodUs)} | ${f(s.sortedSha256Us)} |`,
    ),
    '',
    `memoryStore holding ${heap.keys.toLocaleString('en-US')} completed keys: ${(heap.bytes / 1e6).toFixed(1)} MB ` +
      `(${(heap.bytes / 2 ** 20).toFixed(1)} MiB) of heap, ${Math.round(heap.bytesPerKey)} B per key`,
  ];
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const result = await runInProcess();
  if (process.argv.includes('--json')) console.log(JSON.stringify(result));
  else console.log(formatInProcess(result));
}
