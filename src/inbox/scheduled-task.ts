/**
 * What the inboxes share to run a task on a schedule, one run a tick across every process:
 * `inbox.reconcile(reconciler, …)` and `inbox.watch(watchdog, …)` are each such a task, told
 * apart by their `kind` (their queue `<queueName>.<kind>`, their scheduler's id, their logs).
 * The memory inbox ticks in its process; the BullMQ and pg-boss inboxes each turn a tick into
 * one job of their engine (src/inbox/bullmq-schedule.ts, src/inbox/pg-boss-schedule.ts).
 * @module
 */

import type { RunResult } from '../utils/run-result.js';
import { durationOf } from '../utils/duration.js';

/** The tasks an inbox runs on a schedule, each on a queue of its own. */
export type TaskKind = 'reconcile' | 'watch';

/** How one run ended: what its job keeps (counts, never a secret), or what it threw. */
export type TaskRunResult = RunResult<{ summary: Record<string, unknown> }>;

/** A task on a schedule: one run every `everyMs`, which never rejects. */
export interface ScheduledTask {
  readonly kind: TaskKind;
  readonly everyMs: number;
  /** One run, stopped when `signal` aborts (the worker closed, or the run took too long). */
  run(signal: AbortSignal): Promise<TaskRunResult>;
}

/** The longest `every`: what a timer can wait (2^31 - 1 ms, about 24.8 days), in whole days. */
export const MAX_EVERY_MS = 24 * 86_400_000;

/**
 * A duration in ms: a positive whole number of ms, or a positive whole number and a unit
 * (`ms`, `s`, `m`, `h`, `d`); undefined for anything else.
 *
 * @example
 * ```ts
 * durationMs('90m'); // 5_400_000
 * durationMs(1000); // 1000
 * durationMs('1.5h'); // undefined
 * ```
 */
export function durationMs(value: string | number): number | undefined {
  if (typeof value === 'number') {
    return Number.isSafeInteger(value) && value > 0 ? value : undefined;
  }
  const ms = durationOf(value.trim());
  return ms !== undefined && ms > 0 && Number.isSafeInteger(ms) ? ms : undefined;
}

/** An `every` in ms, if it is one a timer can keep (at most {@link MAX_EVERY_MS}). */
export function everyMsOf(every: string | number): number | undefined {
  const everyMs = durationMs(every);
  return everyMs === undefined || everyMs > MAX_EVERY_MS ? undefined : everyMs;
}

/**
 * The name of the queue a task of `kind` runs on beside an inbox's deliveries
 * (`<queueName>.reconcile`, `<queueName>.watch`): the same for every inbox, so the docs name one.
 *
 * @example
 * ```ts
 * taskQueueName('schoolhooks', 'watch'); // 'schoolhooks.watch'
 * ```
 */
export function taskQueueName(queueName: string, kind: TaskKind): string {
  return `${queueName}.${kind}`;
}

/** The delay from `now` to the next whole multiple of `everyMs` since the epoch. */
export function untilNextTick(now: number, everyMs: number): number {
  return everyMs - (now % everyMs);
}

/**
 * A scheduled task in one process: `tick` at once, then at every whole multiple of `everyMs`;
 * a tick that comes while the last one still runs is skipped. `close()` stops the timer, aborts
 * the signal a running tick was given (`the <kind> worker was closed`), and resolves once it has
 * ended.
 */
export class ScheduleTicker {
  readonly #everyMs: number;
  readonly #tick: (signal: AbortSignal) => Promise<void>;
  readonly #stop = new AbortController();
  readonly #forget: () => void;
  readonly #kind: TaskKind;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(
    everyMs: number,
    tick: (signal: AbortSignal) => Promise<void>,
    forget: () => void = () => {},
    kind: TaskKind = 'reconcile',
  ) {
    this.#everyMs = everyMs;
    this.#tick = tick;
    this.#forget = forget;
    this.#kind = kind;
    this.#fire();
  }

  close(): Promise<void> {
    this.#closing ??= (async () => {
      clearTimeout(this.#timer);
      this.#stop.abort(new Error(`the ${this.#kind} worker was closed`));
      await this.#running;
      this.#forget();
    })();
    return this.#closing;
  }

  #fire(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#running === undefined) {
      const running = this.#tick(this.#stop.signal)
        .catch(() => {})
        .finally(() => {
          if (this.#running === running) this.#running = undefined;
        });
      this.#running = running;
    }
    this.#timer = setTimeout(() => this.#fire(), untilNextTick(Date.now(), this.#everyMs));
  }
}

/** A task run by a {@link ScheduleTicker} in this process only (the memory inbox). */
export function tickInProcess(task: ScheduledTask, forget: () => void): ScheduleTicker {
  return new ScheduleTicker(
    task.everyMs,
    async (signal) => void (await task.run(signal)),
    forget,
    task.kind,
  );
}
