/**
 * The pg-boss of a `pgBossInbox`, started once on first use, with the tables of its schema
 * version, and stopped by the inbox that made it.
 * @module
 */

import { ConfigError } from '../errors.js';
import { messageOf } from '../utils/message-of.js';
import type { Logger } from '../receiving/receiver.js';
import type { PgBossLike } from './pg-boss.js';
import { PgBossTables } from './pg-boss-tables.js';

/** A started pg-boss and the tables of its schema version. */
export interface Started {
  readonly boss: PgBossLike;
  readonly tables: PgBossTables;
}

/** What the starter needs of its inbox's settings. */
export interface StarterSettings {
  /** A pg-boss the inbox was given (its owner stops it), or undefined to make one. */
  readonly given: PgBossLike | undefined;
  readonly schema: string;
  readonly queueName: string;
  readonly logger: Logger | undefined;
  /** Makes the inbox's own pg-boss (for a `connectionString`). */
  readonly make: () => Promise<PgBossLike>;
}

/**
 * pg-boss, started once on first use, and stopped by the inbox that made it. A setup mistake (a
 * version we do not know) is every later caller's error; a database that did not answer is
 * tried again by the next caller, with a new pg-boss (pg-boss does not start twice).
 */
export class BossStarter {
  readonly #settings: StarterSettings;
  #boss: PgBossLike | undefined;
  #starting: Promise<Started> | undefined;
  #listening = false;
  readonly #onError = (error: Error): void => {
    this.#settings.logger?.warn(
      { err: messageOf(error), queue: this.#settings.queueName },
      'inbox database error',
    );
  };

  constructor(settings: StarterSettings) {
    this.#settings = settings;
    this.#boss = settings.given;
  }

  /** The started pg-boss and its tables, started on the first call. */
  started(): Promise<Started> {
    this.#starting ??= this.#start().catch((error: unknown) => {
      if (error instanceof ConfigError) throw error;
      this.#starting = undefined;
      if (this.#settings.given === undefined && this.#boss !== undefined) {
        // The next caller makes a new one (this one keeps its error listener, so a late
        // error of it is logged, never thrown).
        const failed = this.#boss;
        this.#boss = undefined;
        this.#listening = false;
        failed.stop({ graceful: false, wait: false }).catch(() => {});
      }
      throw error;
    });
    return this.#starting;
  }

  /** After a start in progress: stops the pg-boss it made (a boss it was given is its owner's). */
  async stop(): Promise<void> {
    await this.#starting?.catch(() => {});
    if (this.#settings.given === undefined && this.#boss !== undefined) {
      await this.#boss.stop({ graceful: true, wait: true }).catch(() => {});
    }
    if (this.#listening) this.#boss?.off('error', this.#onError);
  }

  async #start(): Promise<Started> {
    const { schema, queueName } = this.#settings;
    this.#boss ??= await this.#settings.make();
    const boss = this.#boss;
    if (!this.#listening) boss.on('error', this.#onError);
    this.#listening = true;
    await boss.start();
    const tables = await PgBossTables.open(
      boss.getDb(),
      schema,
      queueName,
      numberOrNull(await boss.schemaVersion()),
    );
    await boss.createQueue(queueName);
    return { boss, tables };
  }
}

function numberOrNull(value: unknown): number | null {
  const number = Number(value);
  return value === null || value === undefined || !Number.isFinite(number) ? null : number;
}
