/**
 * The TypeScript face of the tolerant schemas: what a handler may read, and nothing more.
 * @module
 */

import type { z } from 'zod';

/**
 * `T` without the index signature of a loose object, recursively: only the fields the schemas
 * name are left, so a misspelt one (`invoice.totlAmount`) is a compile error. At run time the
 * schemas stay loose and fields added later pass through untouched; only the type forgets them.
 * A record of free keys (no field named) keeps its index signature: its keys are the data.
 */
export type KnownFields<T> = T extends
  string | number | boolean | bigint | symbol | null | undefined
  ? T
  : T extends readonly (infer Item)[]
    ? KnownFields<Item>[]
    : T extends object
      ? [NamedKeys<T>] extends [never]
        ? T
        : { [K in keyof T as NamedKey<K>]: KnownFields<T[K]> }
      : T;

/** `K`, unless it is the `string` (or `number`, `symbol`) of an index signature. */
type NamedKey<K> = string extends K
  ? never
  : number extends K
    ? never
    : symbol extends K
      ? never
      : K;

/** The keys of `T` that name a field. */
type NamedKeys<T> = keyof { [K in keyof T as NamedKey<K>]: 0 };

/**
 * The parsed output of schema `S`, with its known fields only (see {@link KnownFields}).
 *
 * @example
 * ```ts
 * type Invoice = KnownOutput<typeof invoiceSchema>; // invoice.totlAmount: a compile error
 * ```
 */
export type KnownOutput<S extends z.ZodType> = KnownFields<z.output<S>>;
