/**
 * Where a delivery's secrets come from: the receiver's own (`secret` a string or a list), or the
 * secret lookup of the delivery's tenant (`secret` a function; many schools on one endpoint,
 * docs/tenants.md), cached per tenant so a flood of deliveries costs one lookup.
 * @module
 */

import { quotedTenant } from '../keys/delivery-key.js';
import { ConfigError, SecretUnavailableError, withCauses } from '../errors.js';
import { createVerifier, paddedSecrets, secretsOf, type Verifier } from '../platform/signature.js';

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
 * Where a delivery's secrets come from: the receiver's own ({@link FixedSecrets}, nothing to wait
 * for), or each tenant's from the seller's lookup ({@link TenantSecrets}).
 */
export type SecretSource = FixedSecrets | TenantSecrets;

/** The receiver's own secrets (`secret` a string or a list), whatever the tenant. */
export interface FixedSecrets {
  /** False: a request need not name a tenant. */
  readonly perTenant: false;
  /** The verifier of the secrets, their keys prepared once. */
  readonly verifier: Verifier;
  /** Nothing to forget: the secrets are the receiver's options. */
  forget(tenant?: string): void;
}

/** The receiver's own secrets, whatever the tenant. */
export function staticSecrets(verifier: Verifier): FixedSecrets {
  return { perTenant: false, verifier, forget: () => {} };
}

/** How {@link TenantSecrets} caches and bounds its lookups. */
export interface TenantSecretsOptions {
  /** How long an answer (a tenant's secrets, or that it has none) is kept, in ms. */
  readonly cacheMs: number;
  /**
   * Tenants with secrets kept at the most, and apart from them names without: in each, the one
   * cached longest ago goes first.
   */
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

/** A lookup under way, and whether its tenant was forgotten since it started. */
interface Lookup {
  readonly answer: Promise<Verifier | undefined>;
  /** Set by `forget`: the answer goes to the deliveries waiting for it, and is not cached. */
  readonly forgotten: { value: boolean };
}

/**
 * The secrets of each tenant, from the seller's lookup: answers are cached for `cacheMs`
 * (negative ones too), and one lookup per tenant is in flight at a time, so any number of
 * concurrent deliveries for one tenant, known or not, costs one lookup. Tenants with secrets and
 * names without are cached apart, at most `cacheSize` of each: a flood of names that are no
 * tenant's (each costs its lookup) never evicts a school's secrets. A lookup that throws or
 * outlasts `timeoutMs` is not cached: the next delivery asks again. Secrets it gives pass the
 * receiver's start-up rules; an unusable one (empty, whitespace only, not a string) is a
 * `ConfigError`, cached like an answer, so it is reported, not looped on. `forget` drops a
 * tenant's answer (every answer), and a lookup under way then is not cached.
 */
export class TenantSecrets {
  /** True: each request must name its tenant. */
  readonly perTenant = true;
  readonly #lookup: SecretLookup;
  readonly #options: TenantSecretsOptions;
  /** Tenants the lookup gave secrets (or unusable ones) for, oldest first: the first to go. */
  readonly #known = new Map<string, Cached>();
  /** Names the lookup gave none for, each with when that answer expires, oldest first. */
  readonly #unknown = new Map<string, number>();
  readonly #inFlight = new Map<string, Lookup>();
  readonly #warned = new Set<string>();

  constructor(lookup: SecretLookup, options: TenantSecretsOptions) {
    this.#lookup = lookup;
    this.#options = options;
  }

  /**
   * The verifier of `tenant`'s secrets (cached, or looked up), `undefined` for a tenant that has
   * none; rejects when they cannot be had now (the lookup failed, outlasted its bound, or gave an
   * unusable secret).
   */
  async verifierOf(tenant: string | undefined): Promise<Verifier | undefined> {
    if (tenant === undefined || tenant === '') return undefined;
    const known = this.#known.get(tenant);
    if (known !== undefined) {
      if (known.expiresAt > this.#options.now()) {
        if (known.unusable !== undefined) throw known.unusable;
        return known.verifier;
      }
      this.#known.delete(tenant);
    } else {
      const unknownUntil = this.#unknown.get(tenant);
      if (unknownUntil !== undefined) {
        if (unknownUntil > this.#options.now()) return undefined;
        this.#unknown.delete(tenant);
      }
    }
    let lookup = this.#inFlight.get(tenant);
    if (lookup === undefined) {
      const forgotten = { value: false };
      lookup = { answer: this.#lookUp(tenant, forgotten), forgotten };
      this.#inFlight.set(tenant, lookup);
    }
    return lookup.answer;
  }

  /**
   * Forget what is known of `tenant`'s secrets (of every tenant's, without one), so that its next
   * delivery looks them up again.
   */
  forget(tenant?: string): void {
    if (tenant === undefined) {
      for (const lookup of this.#inFlight.values()) lookup.forgotten.value = true;
      this.#inFlight.clear();
      this.#known.clear();
      this.#unknown.clear();
      return;
    }
    const lookup = this.#inFlight.get(tenant);
    // It may have read the secrets before they changed: it answers the deliveries waiting for it
    // and is not cached, and the next delivery starts a lookup of its own.
    if (lookup !== undefined) lookup.forgotten.value = true;
    this.#inFlight.delete(tenant);
    this.#known.delete(tenant);
    this.#unknown.delete(tenant);
  }

  /** Ask the lookup, within `timeoutMs`; cache what it answers, unless forgotten meanwhile. */
  async #lookUp(tenant: string, forgotten: Lookup['forgotten']): Promise<Verifier | undefined> {
    // A timer of its own, not AbortSignal.timeout: the lookup takes no signal, so a timeout
    // signal would only be a timer, and one without a clear, pending after a lookup that answered
    // at once until `timeoutMs` passes (or a garbage collection drops it). This one is cleared as
    // the lookup ends.
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
      // Once forgotten, the tenant's entry is another lookup's, or none.
      if (!forgotten.value) this.#inFlight.delete(tenant);
    }
    const cached = this.#prepare(tenant, answer);
    if (!forgotten.value) this.#remember(tenant, cached);
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

  /** Cache an answer with its kind: a name without secrets never takes a known tenant's place. */
  #remember(tenant: string, cached: Cached): void {
    if (cached.verifier === undefined && cached.unusable === undefined) {
      keepBounded(this.#unknown, tenant, cached.expiresAt, this.#options.cacheSize);
    } else {
      keepBounded(this.#known, tenant, cached, this.#options.cacheSize);
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

/** Set `key` in `cache`, and drop the entry cached longest ago when it holds more than `size`. */
function keepBounded<V>(cache: Map<string, V>, key: string, value: V, size: number): void {
  cache.set(key, value);
  if (cache.size > size) {
    // Maps keep insertion order: the first key is the one cached longest ago.
    cache.delete(cache.keys().next().value as string);
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
