/**
 * Where a delivery's secrets come from: the receiver's own (`secret` a string or a list), or the
 * secret lookup of the delivery's tenant (`secret` a function; many schools on one endpoint,
 * docs/tenants.md), cached per tenant so a flood of deliveries costs one lookup.
 * @module
 */

import { quotedTenant } from './delivery-key.js';
import { ConfigError, SecretUnavailableError, withCauses } from './errors.js';
import type { MaybePromise } from './run-steps.js';
import { createVerifier, paddedSecrets, secretsOf, type Verifier } from './signature.js';

/** What a secret lookup is asked. */
export interface SecretLookupRequest {
  /** The tenant the delivery's route names (the adapter's `tenant` option, or `handle({ tenant })`). */
  readonly tenant: string;
}

/**
 * What a secret lookup answers: the tenant's secret, or every active endpoint's secretKey of it
 * (any match verifies); `undefined`, `null` or an empty list for a tenant that has none (the
 * delivery is answered 404 `unknown_tenant`).
 */
export type SecretLookupAnswer = string | readonly string[] | undefined | null;

/**
 * The `secret` option as a function: the secrets of one tenant, looked up (in a database, a
 * vault) when a delivery for it arrives, and cached (`secretCacheMs`).
 *
 * @example
 * ```ts
 * const secret: SecretLookup = async ({ tenant }) => (await db.school(tenant))?.webhookSecret;
 * ```
 */
export type SecretLookup = (
  request: SecretLookupRequest,
) => SecretLookupAnswer | PromiseLike<SecretLookupAnswer>;

/**
 * The secrets of a delivery: its verifier, `undefined` for a tenant that has none, or an error
 * (thrown, or the promise rejected) when they cannot be had now.
 */
export interface SecretSource {
  /** True when the secrets are looked up per tenant, so each request must name its tenant. */
  readonly perTenant: boolean;
  /** The verifier of `tenant`'s secrets: at once when known, a promise while being looked up. */
  verifierOf(tenant: string | undefined): MaybePromise<Verifier | undefined>;
}

/** The receiver's own secrets, whatever the tenant. */
export function staticSecrets(verifier: Verifier): SecretSource {
  return { perTenant: false, verifierOf: () => verifier };
}

/** How {@link TenantSecrets} caches and bounds its lookups. */
export interface TenantSecretsOptions {
  /** How long an answer (a tenant's secrets, or that it has none) is kept, in ms. */
  readonly cacheMs: number;
  /** Tenants kept at the most; the one cached longest ago goes first. */
  readonly cacheSize: number;
  /** How long one lookup may take before the delivery is answered 503 `secret_unavailable`. */
  readonly timeoutMs: number;
  /** The clock, in ms since the epoch. */
  readonly now: () => number;
  /** Told once per tenant of a secret with whitespace around it. */
  readonly warn: (message: string) => void;
}

/** What is cached of one tenant: its verifier, that it has none, or why its secrets are unusable. */
interface Cached {
  readonly expiresAt: number;
  readonly verifier: Verifier | undefined;
  readonly unusable: ConfigError | undefined;
}

/**
 * The secrets of each tenant, from the seller's lookup: answers are cached for `cacheMs`
 * (negative ones too), at most `cacheSize` tenants, and one lookup per tenant is in flight at a
 * time, so any number of concurrent deliveries for one tenant, known or not, costs one lookup.
 * A lookup that throws or outlasts `timeoutMs` is not cached: the next delivery asks again.
 * Secrets it gives pass the receiver's start-up rules; an unusable one (empty, whitespace only,
 * not a string) is a `ConfigError`, cached like an answer, so it is reported, not looped on.
 */
export class TenantSecrets implements SecretSource {
  readonly perTenant = true;
  readonly #lookup: SecretLookup;
  readonly #options: TenantSecretsOptions;
  /** In the order they were cached: the first is the oldest, the first to go. */
  readonly #cache = new Map<string, Cached>();
  readonly #inFlight = new Map<string, Promise<Verifier | undefined>>();
  readonly #warned = new Set<string>();

  constructor(lookup: SecretLookup, options: TenantSecretsOptions) {
    this.#lookup = lookup;
    this.#options = options;
  }

  verifierOf(tenant: string | undefined): MaybePromise<Verifier | undefined> {
    if (tenant === undefined || tenant === '') return undefined;
    const cached = this.#cache.get(tenant);
    if (cached !== undefined) {
      if (cached.expiresAt > this.#options.now()) {
        if (cached.unusable !== undefined) throw cached.unusable;
        return cached.verifier;
      }
      this.#cache.delete(tenant);
    }
    let pending = this.#inFlight.get(tenant);
    if (pending === undefined) {
      pending = this.#lookUp(tenant);
      this.#inFlight.set(tenant, pending);
    }
    return pending;
  }

  /** Ask the lookup, within `timeoutMs`; cache what it answers. */
  async #lookUp(tenant: string): Promise<Verifier | undefined> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new LookupTimeout()), this.#options.timeoutMs);
      // A lookup that hangs must not keep the process alive.
      (timer as { unref?: () => void }).unref?.();
    });
    let answer: SecretLookupAnswer;
    try {
      answer = await Promise.race([
        Promise.resolve().then(() => this.#lookup({ tenant })),
        timedOut,
      ]);
    } catch (cause) {
      throw lookupFailed(tenant, cause, this.#options.timeoutMs);
    } finally {
      clearTimeout(timer);
      this.#inFlight.delete(tenant);
    }
    const cached = this.#prepare(tenant, answer);
    this.#remember(tenant, cached);
    if (cached.unusable !== undefined) throw cached.unusable;
    return cached.verifier;
  }

  /** The lookup's answer, checked by the receiver's own rules for a secret. */
  #prepare(tenant: string, answer: SecretLookupAnswer): Cached {
    const expiresAt = this.#options.now() + this.#options.cacheMs;
    const none =
      answer === undefined || answer === null || (Array.isArray(answer) && answer.length === 0);
    if (none) return { expiresAt, verifier: undefined, unusable: undefined };
    let secrets: string[];
    try {
      secrets = secretsOf(answer);
    } catch (error) {
      const why = error instanceof ConfigError ? error.message : 'secret must be a string';
      const unusable = new ConfigError(
        `the secret lookup of tenant ${quotedTenant(tenant)} gave an unusable secret: ${why}`,
      );
      return { expiresAt, verifier: undefined, unusable };
    }
    this.#warnOfPadding(tenant, secrets);
    return { expiresAt, verifier: createVerifier(secrets), unusable: undefined };
  }

  #remember(tenant: string, cached: Cached): void {
    const cache = this.#cache;
    cache.set(tenant, cached);
    if (cache.size > this.#options.cacheSize) {
      // Maps keep insertion order: the first key is the tenant cached longest ago.
      cache.delete(cache.keys().next().value as string);
    }
  }

  #warnOfPadding(tenant: string, secrets: readonly string[]): void {
    const places = paddedSecrets(secrets);
    if (places.length === 0 || this.#warned.has(tenant)) return;
    if (this.#warned.size >= this.#options.cacheSize) this.#warned.clear();
    this.#warned.add(tenant);
    this.#options.warn(
      `the secret lookup of tenant ${quotedTenant(tenant)} gave a secret with spaces or a line break ` +
        `around it (#${places.join(', #')}); it is used exactly as given, so signatures made ` +
        'with the key as shown fail (401): trim it if that was a copy-paste slip',
    );
  }
}

/** A lookup that outlasted its bound. */
class LookupTimeout extends Error {}

function lookupFailed(tenant: string, cause: unknown, timeoutMs: number): SecretUnavailableError {
  if (cause instanceof LookupTimeout) {
    return new SecretUnavailableError(
      tenant,
      `the secret lookup of tenant ${quotedTenant(tenant)} took longer than ${timeoutMs} ms (secretLookupTimeoutMs)`,
    );
  }
  // The lookup's own words, which may quote anything but the secrets it did not give.
  const why = withCauses(`the secret lookup of tenant ${quotedTenant(tenant)} failed`, cause);
  return new SecretUnavailableError(tenant, why, { cause });
}
