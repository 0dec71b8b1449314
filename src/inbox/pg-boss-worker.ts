/**
 * A worker of a `pgBossInbox`: it fetches jobs from pg-boss, runs them, and asks again when one
 * finishes, when this process enqueues, or every poll interval.
 * @module
 */

import { messageOf } from '../utils/message-of.js';
import type { Logger } from '../receiving/receiver.js';
import type { InboxWorker } from './managed.js';
import type { PgBossFetchedJob } from './pg-boss.js';
import type { Started } from './pg-boss-starter.js';

/** What a worker needs of its inbox. */
export interface WorkerSettings {
  readonly queueName: string;
  readonly concurrency: number;
  readonly pollIntervalMs: number;
  readonly started: () => Promise<Started>;
  readonly logger: Logger | undefined;
  readonly run: (ready: Started, job: PgBossFetchedJob) => Promise<void>;
}

/**
 * A worker: fetches up to `concurrency` jobs at once (pg-boss locks each row it hands out, so
 * any number of workers in any number of processes share a queue), runs each, and asks again
 * when one finishes, when this process enqueues, or every `pollIntervalMs`.
 */
export class PgBossWorker implements InboxWorker {
  /** Resolves once the worker has stopped and its runs have ended. */
  readonly closed: Promise<void>;
  readonly #settings: WorkerSettings;
  readonly #running = new Set<Promise<void>>();
  #stopping = false;
  #wake: (() => void) | undefined;
  #woken = false;

  constructor(settings: WorkerSettings) {
    this.#settings = settings;
    this.closed = this.#loop();
  }

  /** Ask for jobs now rather than at the next poll (or, while fetching, right after). */
  wake(): void {
    if (this.#wake === undefined) this.#woken = true;
    else this.#wake();
  }

  close(): Promise<void> {
    this.#stopping = true;
    this.wake();
    return this.closed;
  }

  async #loop(): Promise<void> {
    const { queueName, started, logger, pollIntervalMs } = this.#settings;
    let ready: Started;
    try {
      ready = await started();
    } catch (error) {
      // A setup mistake (pg-boss of a version we do not know): said loudly, the worker stops.
      (logger ?? console).error(
        { err: messageOf(error), queue: queueName },
        'inbox worker stopped',
      );
      return;
    }
    while (!this.#stopping) {
      for (const job of await this.#fetch(ready)) this.#start(ready, job);
      if (this.#stopping) break;
      // No 'ask again at once' after a full batch: it fills every free slot, so there is no room
      // until a run ends, and a run that ends wakes the loop.
      await this.#sleep(pollIntervalMs);
    }
    await Promise.all(this.#running);
  }

  /** As many jobs as there are free slots (none when every slot runs one); none on a failure. */
  async #fetch({ boss }: Started): Promise<PgBossFetchedJob[]> {
    const { queueName, concurrency, logger } = this.#settings;
    const free = concurrency - this.#running.size;
    if (free <= 0) return [];
    try {
      return await boss.fetch(queueName, { batchSize: free, includeMetadata: true });
    } catch (error) {
      logger?.warn({ err: messageOf(error), queue: queueName }, 'inbox fetch failed');
      return [];
    }
  }

  /** Runs one job in a slot of its own, waking the loop when it ends. */
  #start(ready: Started, job: PgBossFetchedJob): void {
    const { queueName, logger, run } = this.#settings;
    const running: Promise<void> = run(ready, job)
      .catch((error: unknown) => {
        // The job stays active and pg-boss hands it out again once it expires.
        logger?.warn(
          { err: messageOf(error), queue: queueName, job: job.id },
          'inbox job update failed',
        );
      })
      .finally(() => {
        this.#running.delete(running);
        this.wake();
      });
    this.#running.add(running);
  }

  /** Wait `ms`, or less when woken. */
  #sleep(ms: number): Promise<void> {
    if (this.#woken) {
      this.#woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        if (this.#wake === done) this.#wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.#wake = done;
    });
  }
}
