/**
 * The receiver's options: their defaults, checked once at start-up (a mistake is a `ConfigError`
 * before the first delivery), and prepared for the pipeline (the secrets' keys, the logger).
 * @module
 */

import { consoleLogger } from './console-logger.js';
import { RECEIVER_DEFAULTS, RECONCILE_DEFAULTS } from '../defaults.js';
import { ConfigError } from '../errors.js';
import type { z } from 'zod';
import type { FixedEventName } from '../platform/events/index.js';
import type { Inbox } from '../inbox/types.js';
import {
  staticSecrets,
  TenantSecrets,
  type SecretLookup,
  type SecretSource,
} from './secret-source.js';
import { createVerifier, paddedSecrets, secretsOf } from '../platform/signature.js';
import { memoryStore } from '../stores/memory.js';
import { checkStore } from '../stores/check-store.js';
import type { IdempotencyStore } from '../stores/types.js';
import type { Telemetry } from '../telemetry/telemetry.js';

/** A pino-compatible logger. It is never given a secret, a signature, a body or a token. */
export interface Logger {
  /** Detail for debugging: a delivery's steps. */
  debug(obj: Record<string, unknown>, msg?: string): void;
  /** What went as it should. */
  info(obj: Record<string, unknown>, msg?: string): void;
  /** A refused delivery or a failure the platform's retry may mend. */
  warn(obj: Record<string, unknown>, msg?: string): void;
  /** A failure that needs a person: a handler, a store or a setup mistake. */
  error(obj: Record<string, unknown>, msg?: string): void;
}

/** Options of `createReceiver`. */
export interface ReceiverOptions {
  /**
   * Every active endpoint's secretKey; a signature that matches any of them verifies. Or, for many
   * schools on one endpoint, a function that looks up the secrets of the delivery's tenant (the
   * adapter's `tenant` option names it): `undefined` for a tenant that has none (404
   * `unknown_tenant`), a throw or a promise that outlasts `secretLookupTimeoutMs` for one that
   * cannot be had now (503 `secret_unavailable`). Its answers are cached per tenant.
   */
  secret: string | readonly string[] | SecretLookup;
  /** With a secret lookup: how long a tenant's answer is kept, its "no such tenant" too. Default 60 s. */
  secretCacheMs?: number;
  /**
   * With a secret lookup: tenants with secrets kept in the cache at the most, and apart from them
   * as many names without, so a flood of unknown names never evicts a school. Default 10 000.
   */
  secretCacheSize?: number;
  /** With a secret lookup: how long one lookup may take. Default 2 s (with the store and the handlers, within the platform's 15 s); beyond it -> 503. */
  secretLookupTimeoutMs?: number;
  /** Where claims and completed keys live. Default: a fresh {@link memoryStore}. */
  store?: IdempotencyStore;
  /** Largest body accepted, in bytes. Default 1 MiB; beyond it -> 413. */
  maxBodyBytes?: number;
  /** Oldest event accepted, by its `timestamp`. Default 72 h; older -> 422 `stale`. */
  maxEventAgeMs?: number;
  /** How long a completed key is remembered. Default 7 days; must be >= maxEventAgeMs. */
  dedupTtlMs?: number;
  /** How long an in-flight claim holds before another delivery may take it. Default 60 s. */
  leaseMs?: number;
  /** How long handlers may run before the delivery is answered 503 `timeout`. Default 10 s. */
  handlerTimeoutMs?: number;
  /**
   * Where the receiver logs what happened to each delivery. Default: the console, `warn` and
   * `error` lines only (`console.warn`, `console.error`), one per failure that no `onError`
   * handler is told of. `false`: nowhere.
   */
  logger?: Logger | false;
  /** The clock, in ms since the epoch. Default `Date.now`; tests and simulators set their own. */
  now?: () => number;
  /**
   * Store each verified delivery here and answer 202 `queued`; workers run the handlers later
   * (`inbox.work(receiver)`). Default: none, the handlers run before the answer.
   */
  inbox?: Inbox;
  /** Told of every delivery and every inbox run (`openTelemetry()` from `schoolhooks/otel`). */
  telemetry?: Telemetry;
  /**
   * Replace the schema of some fixed-contract events, e.g. to accept a payload the bundled
   * schema refuses until an upgrade of schoolhooks reads it (then replay the inbox's dead
   * letters). Handlers keep the bundled types. Default: the bundled schemas.
   */
  schemas?: Partial<Record<FixedEventName, z.ZodType>>;
  /**
   * Record in the store each entity the platform lists (a paid invoice, a product access, a
   * certificate, a user) when its event is processed or queued, for 35 days, so a reconcile run
   * (`schoolhooks/reconcile`) recovers only what no webhook handled. One more store write per
   * such delivery (in the handlers' transaction on `postgresStore`). Default true; `false` only
   * when you never reconcile: a reconciler refuses such a receiver.
   */
  recordEntities?: boolean;
  /**
   * Keep, in the store, what the watchdog reads (`schoolhooks/watchdog`): the last success, the
   * last attempt, and each delivery answered non-2xx, for every process. Written in one store call
   * once a second per process, as soon as 1 000 wait, and when a watchdog given the receiver
   * checks; never one a delivery. Default true when the store keeps them (`memoryStore`,
   * `redisStore` and `postgresStore` do).
   */
  watch?: boolean;
}

/** Which levels of a logger are written to: a line object is built for those only. */
export type LevelsOn = Readonly<Record<keyof Logger, boolean>>;

/** A receiver's options with their defaults, checked and prepared. */
export interface ReceiverSettings {
  /** Where each delivery's secrets come from, their keys prepared once (or once per tenant). */
  readonly secretSource: SecretSource;
  /** The receiver's own secrets (none with a lookup): what no error message may show. */
  readonly secrets: readonly string[];
  readonly store: IdempotencyStore;
  readonly maxBodyBytes: number;
  readonly maxEventAgeMs: number;
  readonly dedupTtlMs: number;
  readonly leaseMs: number;
  readonly handlerTimeoutMs: number;
  /** The logger, the console's by default; none with `logger: false`. */
  readonly log: Logger | undefined;
  /** Whether `log` is the console fallback (it writes only failures nobody else is told of). */
  readonly logIsConsole: boolean;
  readonly levelsOn: LevelsOn;
  readonly now: () => number;
  readonly inbox: Inbox | undefined;
  readonly telemetry: Telemetry | undefined;
  readonly schemas: Partial<Record<FixedEventName, z.ZodType>> | undefined;
  /** Whether deliveries' answers are kept for the watchdog (`watch`, and a store that keeps them). */
  readonly watch: boolean;
  /** How long an entity's record is kept; undefined with `recordEntities: false`. */
  readonly recordTtlMs: number | undefined;
}

/** The options with their defaults, checked: a mistake is a `ConfigError` at start-up. */
export function checkOptions({
  secret,
  store = memoryStore(),
  maxBodyBytes = RECEIVER_DEFAULTS.maxBodyBytes,
  maxEventAgeMs = RECEIVER_DEFAULTS.maxEventAgeMs,
  dedupTtlMs = RECEIVER_DEFAULTS.dedupTtlMs,
  leaseMs = RECEIVER_DEFAULTS.leaseMs,
  handlerTimeoutMs = RECEIVER_DEFAULTS.handlerTimeoutMs,
  logger,
  now = Date.now,
  inbox,
  telemetry,
  schemas,
  secretCacheMs = RECEIVER_DEFAULTS.secretCacheMs,
  secretCacheSize = RECEIVER_DEFAULTS.secretCacheSize,
  secretLookupTimeoutMs = RECEIVER_DEFAULTS.secretLookupTimeoutMs,
  recordEntities = true,
  watch = true,
}: ReceiverOptions): ReceiverSettings {
  checkPositive({ maxBodyBytes, maxEventAgeMs, dedupTtlMs, leaseMs, handlerTimeoutMs });
  checkPositive({ secretCacheMs, secretCacheSize, secretLookupTimeoutMs });
  if (dedupTtlMs < maxEventAgeMs) {
    // A key forgotten while its event is still accepted would let a late retry run twice.
    throw new ConfigError(
      'dedupTtlMs must be >= maxEventAgeMs, or a late retry is processed twice',
    );
  }
  if (typeof recordEntities !== 'boolean') {
    throw new ConfigError(`recordEntities must be true or false, not ${typeof recordEntities}`);
  }
  if (typeof watch !== 'boolean') {
    throw new ConfigError(`watch must be true or false, not ${typeof watch}`);
  }
  if (inbox !== undefined && typeof inbox.enqueue !== 'function') {
    throw new ConfigError('inbox must have an enqueue(delivery) method');
  }
  // Failures are never silent: without a logger they reach the console.
  const log = logger === false ? undefined : (logger ?? consoleLogger);
  const lookup = { secretCacheMs, secretCacheSize, secretLookupTimeoutMs, now };
  const { secretSource, secrets } = secretsFrom(secret, lookup, log);
  return {
    secretSource,
    secrets,
    store: checkStore(store, 'store'),
    maxBodyBytes,
    maxEventAgeMs,
    dedupTtlMs,
    leaseMs,
    handlerTimeoutMs,
    log,
    logIsConsole: log === consoleLogger,
    levelsOn: levelsOn(log),
    now,
    inbox,
    telemetry,
    schemas,
    recordTtlMs: recordEntities ? RECONCILE_DEFAULTS.recordTtlMs : undefined,
    watch,
  };
}

/**
 * Where the secrets come from: the static ones, checked now (the ConfigError names a secret by
 * its place, never by its value), or the lookup, whose answers are checked as they come.
 */
function secretsFrom(
  secret: ReceiverOptions['secret'],
  {
    secretCacheMs,
    secretCacheSize,
    secretLookupTimeoutMs,
    now,
  }: Required<
    Pick<ReceiverOptions, 'secretCacheMs' | 'secretCacheSize' | 'secretLookupTimeoutMs' | 'now'>
  >,
  log: Logger | undefined,
): { secretSource: SecretSource; secrets: readonly string[] } {
  if (typeof secret === 'function') {
    const secretSource = new TenantSecrets(secret, {
      cacheMs: secretCacheMs,
      cacheSize: secretCacheSize,
      timeoutMs: secretLookupTimeoutMs,
      now,
      warn: (message) => log?.warn({}, message),
    });
    return { secretSource, secrets: [] };
  }
  const secrets = secretsOf(secret);
  warnOfPaddedSecrets(secret, secrets, log);
  return { secretSource: staticSecrets(createVerifier(secrets)), secrets };
}

/** Every size and duration positive. */
function checkPositive(sizes: Readonly<Record<string, number>>): void {
  for (const [name, value] of Object.entries(sizes)) {
    if (!Number.isFinite(value) || value <= 0) {
      throw new ConfigError(`${name} must be a positive number of ${unitOf(name)}`);
    }
  }
}

/** What an option of `name` counts. */
function unitOf(name: string): string {
  if (name === 'maxBodyBytes') return 'bytes';
  return name.endsWith('Ms') ? 'ms' : 'tenants';
}

/** A secret with whitespace around it is used as given, and warned about once. */
function warnOfPaddedSecrets(
  secret: ReceiverOptions['secret'],
  secrets: readonly string[],
  log: Logger | undefined,
): void {
  for (const place of paddedSecrets(secrets)) {
    const which = typeof secret === 'string' ? 'the secret' : `secret #${place} of the list`;
    log?.warn(
      {},
      `${which} has spaces or a line break around it; it is used exactly as given, so ` +
        'signatures made with the key as shown fail (401): trim it if that was a copy-paste slip',
    );
  }
}

/** The console takes warn and error lines only: no line object is built for the others. */
function levelsOn(log: Logger | undefined): LevelsOn {
  const all = log !== undefined && log !== consoleLogger;
  return { debug: all, info: all, warn: log !== undefined, error: log !== undefined };
}
