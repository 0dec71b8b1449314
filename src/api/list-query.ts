/**
 * The query string of a list operation (docs/platform.md#list-operations): the caller's filters,
 * checked before anything is sent, and the one rule for writing them in a query.
 * @module
 */

/** A value a list's query holds: a scalar, a list of them, or an object of them. */
export type QueryValue =
  | string
  | number
  | boolean
  | undefined
  | readonly QueryValue[]
  | { readonly [name: string]: QueryValue };

/** The filters of one list call, under the platform's parameter names. */
export type QueryFilters = Readonly<Record<string, QueryValue>>;

/**
 * A window of dates, each end a `Date` or a string `Date.parse` reads (sent as ISO 8601). Either
 * end may be left out.
 */
export interface DateRange {
  from?: Date | string | undefined;
  to?: Date | string | undefined;
}

/**
 * `take` and `skip` first, then the filters. An array repeats its key (`userIds=1&userIds=2`); an
 * object's fields go in brackets (`createdAtDateRange[from]=…`, `payment[actualStatuses]=Completed`).
 * The platform does not document how a nested object is written: brackets are the usual form for
 * its kind of server, and this function is the one place that says so.
 */
export function listQuery(filters: QueryFilters, skip: number, take: number): string {
  const params = new URLSearchParams();
  appendParam(params, 'take', take);
  appendParam(params, 'skip', skip);
  for (const [name, value] of Object.entries(filters)) appendParam(params, name, value);
  return params.toString();
}

function appendParam(params: URLSearchParams, name: string, value: QueryValue): void {
  if (value === undefined) return;
  if (Array.isArray(value)) {
    for (const item of value as readonly QueryValue[]) appendParam(params, name, item);
  } else if (typeof value === 'object') {
    for (const [field, inner] of Object.entries(value)) {
      appendParam(params, `${name}[${field}]`, inner);
    }
  } else {
    params.append(name, String(value));
  }
}

/** True when a filter is an empty list: it matches nothing, so nothing needs to be asked. */
export function matchesNothing(filters: QueryFilters): boolean {
  return Object.values(filters).some((value) => Array.isArray(value) && value.length === 0);
}

/** A list of ids: positive integers, or undefined when not given. A TypeError otherwise. */
export function idList(value: unknown, name: string): readonly number[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every(isPositiveInteger)) {
    throw new TypeError(`${name} must be an array of positive integers`);
  }
  return value as readonly number[];
}

/** A list of non-empty strings (statuses, types), or undefined when not given. */
export function textList(value: unknown, name: string): readonly string[] | undefined {
  if (value === undefined) return undefined;
  if (!Array.isArray(value) || !value.every((item) => typeof item === 'string' && item !== '')) {
    throw new TypeError(`${name} must be an array of non-empty strings`);
  }
  return value as readonly string[];
}

/** A boolean filter, or undefined when not given. */
export function flag(value: unknown, name: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw new TypeError(`${name} must be a boolean`);
}

/** A {@link DateRange} as `{ from, to }` ISO strings; `from` after `to` is a TypeError. */
export function dateRange(
  value: unknown,
  name: string,
): { from: string | undefined; to: string | undefined } | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null) {
    throw new TypeError(`${name} must be an object { from?, to? }`);
  }
  const { from, to } = value as DateRange;
  const range = { from: isoDate(from, `${name}.from`), to: isoDate(to, `${name}.to`) };
  if (range.from !== undefined && range.to !== undefined && range.from > range.to) {
    throw new TypeError(`${name}.from must not be after ${name}.to`);
  }
  return range;
}

function isoDate(value: unknown, name: string): string | undefined {
  if (value === undefined) return undefined;
  const time =
    value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : NaN;
  if (Number.isNaN(time)) throw new TypeError(`${name} must be a valid Date or date string`);
  return new Date(time).toISOString();
}

/** Whether `value` is an integer from 1 up. */
export function isPositiveInteger(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0;
}
