/**
 * Fixture factories: realistic, schema-valid `data` for every fixed-contract event, full or with
 * only its spine, with typed deep-partial overrides.
 * @module
 */

import {
  FIXED_CONTRACT_EVENTS,
  type EventData,
  type FixedEventName,
} from '../platform/events/index.js';
import { FIXTURE_ENVELOPES, SPARSE_FIXTURE_ENVELOPES } from './fixture-envelopes.js';

/**
 * `T` with every object property optional, recursively, and room in each object for fields `T`
 * does not name: a payload is a loose object (docs/events.md), the fixtures carry fields the
 * types leave out (`access.userId`, `user.starsBalance`), and a test may add one the platform
 * sends later. A named field keeps its type, so `totalAmount: '4900'` does not compile; a field
 * spelt otherwise is one more field. Arrays are not partial: an override replaces an array whole,
 * so it is given whole. A primitive (an open union's `string & {}` too) is left as it is.
 */
export type DeepPartial<T> = T extends
  readonly unknown[] | string | number | boolean | bigint | symbol | null | undefined
  ? T
  : T extends object
    ? { [K in keyof T]?: DeepPartial<T[K]> } & { readonly [field: string]: unknown }
    : T;

/** Builds one event's `data`: the fixture, deep-merged with `overrides`. */
export type FixtureFactory<N extends FixedEventName> = (
  overrides?: DeepPartial<EventData<N>>,
) => EventData<N>;

/** One {@link FixtureFactory} per fixed-contract event. */
export type Fixtures = { readonly [N in FixedEventName]: FixtureFactory<N> };

/**
 * One factory per fixed-contract event, each returning a fresh copy of that event's fixture
 * `data` (`fixtures/<EventName>.json`) deep-merged with the overrides: objects merge key by key,
 * arrays and every other value replace what was there, `null` sets null.
 *
 * @example
 * ```ts
 * import { fixtures } from 'schoolhooks/testing';
 *
 * const data = fixtures.PaymentCompleted({ payment: { invoice: { totalAmount: 4900, currency: 'EUR' } } });
 * const free = fixtures.ProductEnrolledToFree({ states: { utmEnrollParams: { utm_source: 'newsletter' } } });
 * ```
 */
export const fixtures: Fixtures = factoriesOf(FIXTURE_ENVELOPES);

/**
 * One factory per fixed-contract event whose `data` carries only the event's spine (docs/events.md):
 * the fields a payload must have to be processed (`fixtures/sparse/<EventName>.json`), e.g. for
 * PaymentCompleted the payment's and invoice's ids, `totalAmount`, `currency` and the buyer's id.
 * Handlers that pass these read nothing the platform may leave out. Overrides merge as in
 * {@link fixtures}.
 *
 * @example
 * ```ts
 * import { createDelivery, sparseFixtures } from 'schoolhooks/testing';
 *
 * const data = sparseFixtures.PaymentCompleted(); // { payment: { id, invoice: { id, totalAmount, currency, user: { id } } } }
 * const delivery = createDelivery('PaymentCompleted', data, { secret });
 * ```
 */
export const sparseFixtures: Fixtures = factoriesOf(SPARSE_FIXTURE_ENVELOPES);

/** A fresh copy of the fixture `data` of `name`. @internal */
export function fixtureData<N extends FixedEventName>(name: N): EventData<N> {
  return structuredClone(FIXTURE_ENVELOPES[name].data) as EventData<N>;
}

/** The envelope of one fixture, as the factories read it. @internal */
export interface FixtureSource {
  readonly data: unknown;
}

function factoriesOf(envelopes: { readonly [N in FixedEventName]: FixtureSource }): Fixtures {
  return Object.freeze(
    Object.fromEntries(
      FIXED_CONTRACT_EVENTS.map((name) => [name, factoryOf(name, envelopes[name])]),
    ),
  ) as Fixtures;
}

/**
 * A factory of `name` (named after it, so a stack trace says which one it was) building fresh
 * copies of `source.data` merged with the overrides. @internal
 */
export function factoryOf<N extends string, D>(
  name: N,
  source: FixtureSource,
): (overrides?: DeepPartial<D>) => D {
  const factory = {
    [name](overrides?: DeepPartial<D>): D {
      const data = structuredClone(source.data);
      return (overrides === undefined ? data : deepMerge(data, overrides)) as D;
    },
  }[name];
  return factory as (overrides?: DeepPartial<D>) => D;
}

/** Merge `override` into `base` (already a private copy): plain objects key by key, the rest replaced. */
function deepMerge(base: unknown, override: unknown): unknown {
  if (override === undefined) return base;
  if (!isPlainObject(base) || !isPlainObject(override)) return structuredClone(override);
  const merged: Record<string, unknown> = base;
  for (const [key, value] of Object.entries(override)) {
    if (value === undefined) continue;
    // defineProperty, not assignment: an override key `__proto__` stays a plain key.
    Object.defineProperty(merged, key, {
      value: deepMerge(Object.hasOwn(merged, key) ? merged[key] : undefined, value),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return merged;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
