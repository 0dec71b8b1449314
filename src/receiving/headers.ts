/**
 * Reading one header from whatever header object an adapter has.
 * @module
 */

/** A Fetch `Headers`-like object. */
export interface HeadersLike {
  /** The header's value, or null when it is absent; `name` in any letter case. */
  get(name: string): string | null;
}

/** Headers as a Fetch `Headers`, Node's `IncomingHttpHeaders`, or a plain object in any letter case. */
export type HeadersInput =
  HeadersLike | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The value of header `name` (given in lowercase), or undefined. Node joins repeated headers or
 * gives an array; an array yields its first value.
 */
export function getHeader(
  headers: HeadersInput | null | undefined,
  name: string,
): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as HeadersLike).get === 'function') {
    return (headers as HeadersLike).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, unknown>>;
  let value = record[name];
  if (value === undefined) {
    for (const key of Object.keys(record)) {
      if (key.length === name.length && key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  if (Array.isArray(value)) value = value[0];
  return typeof value === 'string' ? value : undefined;
}
