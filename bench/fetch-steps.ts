/**
 * Where the CPU time of a Fetch delivery goes, step by step, on the runtime that runs this file:
 * the hand-written Fetch handler of the (g) rows, then the receiver's pipeline cut short after
 * each step (each cut answers as the adapter does once its last step ran), then the whole
 * `fetchHandler`, then the (h) rows' handler: (g)'s doing fetchHandler's work in a straight line.
 * Each cut minus the one before is what that step costs over a `Request`.
 *
 * It measures what a profiler cannot show on every runtime: Bun's `--cpu-prof` gives a server's
 * idle time to the last JavaScript frame, so on a server it cannot say where a delivery's time
 * goes. In process there is no idle time, and no server either: the figures are the handler's
 * own cost, the server's share left out. One process measures one cut, so that no cut's code
 * is shaped by another's (in one process the shared steps saw every cut's types, and the whole
 * fetchHandler measured a third slower than alone); bench/run.ts runs every cut on Node, Bun and
 * Deno, in passes that alternate their order.
 *
 * Run alone: `bun bench/fetch-steps.ts <small|large> <cut>` (a cut of {@link CUTS}); it prints
 * one JSON line, the median CPU µs per delivery of its rounds.
 * @module
 */

import process from 'node:process';
import { fetchRequestInput } from '../src/adapters/fetch-request-input.js';
import { answerHeaders } from '../src/adapters/adapter-kit.js';
import { getHeader } from '../src/receiving/request.js';
import {
  checkOptions,
  DeliveryPipeline,
  DeliveryOutcome,
  Stages,
  type AnyHandler,
  type Arrival,
  type PipelineRequest,
} from '../src/internal.js';
import {
  BENCH_RECEIVER_OPTIONS,
  BODY_KINDS,
  bodyFactory,
  randomTag,
  type BodyKind,
} from './bodies.js';
import { cpuMicros, median } from './measure.js';
import {
  adapterHandler,
  handWrittenHandler,
  sameWorkHandler,
  type WebHandler,
} from './web-handlers.js';

/** The handlers measured, in the order the table shows them. */
export const CUTS = [
  'hand-written',
  'read',
  'verify, parse',
  'age',
  'validate',
  'claim',
  'dispatch',
  'fetchHandler',
  'same work',
] as const satisfies readonly string[];
/**
 * A handler measured: the hand-written one, a cut of the pipeline, fetchHandler, or the
 * hand-written one doing fetchHandler's work in a straight line (bench/web-handlers.ts).
 */
export type Cut = (typeof CUTS)[number];

/** CPU µs per delivery of each handler on one body size: medians over the passes. */
export interface FetchStepCosts {
  runtime: string;
  kind: BodyKind;
  bytes: number;
  us: Record<Cut, number>;
}

/** Rounds each process measures. */
const ROUNDS = process.env.BENCH_QUICK === '1' ? 3 : 5;
/**
 * Blocks run before the rounds: the engines' optimising tiers take thousands of calls (Bun's
 * fetchHandler measured twice its settled cost after two blocks).
 */
const WARM_UP_BLOCKS = 5;
/** Deliveries per handler per round. */
const BLOCK = 2000;

function runtimeName(): string {
  const { Bun, Deno } = globalThis as {
    Bun?: { version: string };
    Deno?: { version: { deno: string } };
  };
  if (Bun) return `Bun ${Bun.version}`;
  if (Deno) return `Deno ${Deno.version.deno}`;
  return `Node ${process.version}`;
}

/** The cuts of the pipeline: the step of `dispatchNow` each one ends after. */
type PipelineCut = Exclude<Cut, 'hand-written' | 'fetchHandler' | 'same work'>;

/** A run of the pipeline's first steps, as far as a cut goes. */
type CutRun = Stages<PipelineRequest, unknown, DeliveryOutcome, Arrival>;

/** The steps of `dispatchNow` up to each cut, each cut the one before and one step more. */
function cutRuns(pipeline: DeliveryPipeline): Record<PipelineCut, CutRun> {
  const {
    checkRequest,
    readBody,
    findSecrets,
    verify,
    parse,
    checkAge,
    validate,
    claim,
    dispatch,
  } = pipeline;
  const read = Stages.start<PipelineRequest, Arrival, DeliveryOutcome>(DeliveryOutcome.is)
    .then(checkRequest)
    .then(readBody);
  const parsed = read.then(findSecrets).then(verify).then(parse);
  const aged = parsed.then(checkAge);
  const validated = aged.then(validate);
  const claimed = validated.then(claim);
  const dispatched = claimed.then(dispatch);
  return {
    read,
    'verify, parse': parsed,
    age: aged,
    validate: validated,
    claim: claimed,
    dispatch: dispatched,
  };
}

/**
 * The receiver's pipeline cut short after the step `cut` names, behind the adapter's own reading
 * of a `Request` and answer, as `fetchHandler` puts them around the whole list.
 */
function cutHandler(cut: PipelineCut): WebHandler {
  const onEvent: AnyHandler = async () => {};
  const pipeline = new DeliveryPipeline({
    ...checkOptions({ ...BENCH_RECEIVER_OPTIONS, logger: false }),
    handlersOf: () => [onEvent],
    reportError: (error) => {
      throw error;
    },
  });
  const run = cutRuns(pipeline)[cut];
  return async (request) => {
    const input = fetchRequestInput(request, undefined);
    const arrival: Arrival = {
      signature: getHeader(input.headers, 'signature'),
      attempt: 1,
      tenant: undefined,
      tenantUnread: undefined,
      observation: undefined,
    };
    const given = await run.run(input, arrival);
    // A cut before dispatch that gave a value went as far as the cut.
    const outcome = DeliveryOutcome.is(given) ? given.outcome : 'processed';
    const status = outcome === 'processed' ? 200 : 500;
    return new Response(JSON.stringify({ ok: status === 200, outcome }), {
      status,
      headers: answerHeaders(status),
    });
  };
}

function handlerOf(cut: Cut): WebHandler {
  const ignore = () => {};
  if (cut === 'hand-written') return handWrittenHandler(ignore);
  if (cut === 'same work') return sameWorkHandler(ignore);
  if (cut === 'fetchHandler') {
    return adapterHandler(ignore, (error) => {
      throw error;
    });
  }
  return cutHandler(cut);
}

/** CPU µs per delivery for `count` fresh signed deliveries; the requests are built untimed. */
async function measureBlock(
  handler: WebHandler,
  make: (n: number) => { body: Uint8Array; signature: string },
  next: () => number,
  count: number,
): Promise<number> {
  const requests: Request[] = [];
  for (let i = 0; i < count; i++) {
    const { body, signature } = make(next());
    requests.push(
      new Request('http://127.0.0.1/webhooks/school', {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': String(body.byteLength),
          signature,
        },
        body: body as Uint8Array<ArrayBuffer>,
      }),
    );
  }
  const since = process.cpuUsage();
  for (const request of requests) {
    const response = await handler(request);
    if (response.status !== 200) {
      throw new Error(`answered ${response.status}: ${await response.text()}`);
    }
    await response.arrayBuffer();
  }
  return cpuMicros(since) / count;
}

/** What one process measured: one cut on one body size. */
export interface FetchStepSample {
  runtime: string;
  kind: BodyKind;
  bytes: number;
  cut: Cut;
  /** Median CPU µs per delivery of its rounds. */
  us: number;
}

/** One cut on one body size: warmed up, then ROUNDS rounds of BLOCK fresh deliveries. */
export async function measureFetchStep(kind: BodyKind, cut: Cut): Promise<FetchStepSample> {
  const { make, size } = bodyFactory(kind, randomTag());
  let n = 0;
  const next = () => n++;
  const handler = handlerOf(cut);
  await measureBlock(handler, make, next, WARM_UP_BLOCKS * BLOCK);
  const samples: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    samples.push(await measureBlock(handler, make, next, BLOCK));
  }
  return { runtime: runtimeName(), kind, bytes: size, cut, us: median(samples) };
}

/** The samples of every pass, as the table reads them: per runtime and body, the median per cut. */
export function fetchStepCosts(samples: readonly FetchStepSample[]): FetchStepCosts[] {
  const groups = new Map<string, FetchStepSample[]>();
  for (const sample of samples) {
    const key = `${sample.runtime}\u0000${sample.kind}`;
    groups.set(key, [...(groups.get(key) ?? []), sample]);
  }
  return [...groups.values()].map((group) => {
    const { runtime, kind, bytes } = group[0]!;
    const us = Object.fromEntries(
      CUTS.map((cut) => [cut, median(group.filter((s) => s.cut === cut).map((s) => s.us))]),
    ) as Record<Cut, number>;
    return { runtime, kind, bytes, us };
  });
}

/**
 * The results as a Markdown table: each handler's CPU µs per delivery, and for each step what it
 * added to the cut before it.
 */
export function formatFetchSteps(results: readonly FetchStepCosts[]): string {
  const header = [
    '| runtime | body | ' +
      CUTS.map((cut) => (cut === 'read' ? 'read (+ answer)' : cut)).join(' | ') +
      ' | fetchHandler / hand-written | fetchHandler / same work |',
    '| - | - | ' + CUTS.map(() => '-:').join(' | ') + ' | -: | -: |',
  ];
  const rows = results.map(({ runtime, kind, bytes, us }) => {
    const cells = CUTS.map((cut, i) => {
      // What a step added: each cut of the pipeline, and fetchHandler, over the cut before it.
      const previous = i >= 2 && cut !== 'same work' ? us[CUTS[i - 1]!] : undefined;
      const added = previous === undefined ? '' : ` (${signed(us[cut] - previous)})`;
      return `${us[cut].toFixed(1)}${added}`;
    });
    // As speeds, like the servers' ratios: the other handler's CPU per delivery over fetchHandler's.
    const ratios = [us['hand-written'], us['same work']].map((u) =>
      (u / us.fetchHandler).toFixed(2),
    );
    return `| ${runtime} | ${kind} (${bytes} B) | ${cells.join(' | ')} | ${ratios.join(' | ')} |`;
  });
  return [...header, ...rows].join('\n');
}

function signed(value: number): string {
  return `${value >= 0 ? '+' : '−'}${Math.abs(value).toFixed(1)}`;
}

// Bun and Deno say whether this is the entry module; Node 20 does not (file:// and its path).
const isMain =
  (import.meta as { main?: boolean }).main ?? import.meta.url === `file://${process.argv[1]}`;
if (isMain) {
  const [kind, cut] = process.argv.slice(2) as [BodyKind, Cut];
  if (!BODY_KINDS.includes(kind) || !CUTS.includes(cut)) {
    throw new Error(`usage: fetch-steps <${BODY_KINDS.join('|')}> <${CUTS.join('|')}>`);
  }
  console.log(JSON.stringify(await measureFetchStep(kind, cut)));
}
