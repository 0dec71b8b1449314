/**
 * Checks shared by `buildDeepLink` and `parseDeepLink`. Their messages never quote a value, so a
 * token can never end up in one.
 * @module
 */

import type { DeepLinkPage } from './types.js';

// RFC 1123 labels: letters, digits and inner hyphens, 1 to 63 characters.
const DOMAIN_LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
// RFC 3986 section 3.1.
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*$/;
// Web schemes need a host and would not open the app; javascript: and friends are never links.
const FORBIDDEN_SCHEMES = new Set([
  'http',
  'https',
  'ws',
  'wss',
  'ftp',
  'file',
  'javascript',
  'data',
  'blob',
  'about',
]);
// With the u flag a surrogate pair is one code point, so only a lone half matches.
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;

/** Throws unless `domain` looks like a fully qualified domain name (two labels or more). */
export function assertDomain(domain: unknown): asserts domain is string {
  if (
    typeof domain !== 'string' ||
    domain.length > 253 ||
    !domain.split('.').every((label) => DOMAIN_LABEL.test(label)) ||
    !domain.includes('.')
  ) {
    throw new TypeError(
      "domain must be the school's domain name, e.g. school.example.com (no scheme, port or path)",
    );
  }
}

/** The scheme in lower case (its canonical form); throws for anything RFC 3986 or apps reject. */
export function normalizeScheme(scheme: unknown): string {
  if (typeof scheme !== 'string' || !SCHEME.test(scheme)) {
    throw new TypeError(
      'scheme must be a URL scheme such as serviceapp (a letter, then a-z 0-9 + . -)',
    );
  }
  const lower = scheme.toLowerCase();
  if (FORBIDDEN_SCHEMES.has(lower)) {
    throw new TypeError(`scheme must be the app's own scheme, not ${lower}`);
  }
  return lower;
}

/** A fresh `{ pageId, params }` from `page`, after checking it; `name` says where it was. */
export function checkPage(page: unknown, name: string): DeepLinkPage {
  if (typeof page !== 'object' || page === null) throw new TypeError(`${name} must be an object`);
  const pageId: unknown = 'pageId' in page ? page.pageId : undefined;
  const params: unknown = 'params' in page ? page.params : undefined;
  if (typeof pageId !== 'string' || pageId === '' || LONE_SURROGATE.test(pageId)) {
    throw new TypeError(`${name}.pageId must be a non-empty, well-formed string`);
  }
  if (typeof params !== 'object' || params === null || Array.isArray(params)) {
    throw new TypeError(`${name}.params must be an object of strings`);
  }
  const entries: [string, string][] = [];
  for (const [key, value] of Object.entries(params)) {
    if (typeof value !== 'string') {
      throw new TypeError(
        `${name}.params.${key} must be a string (the app reads every value as one)`,
      );
    }
    entries.push([key, value]);
  }
  // fromEntries defines own properties, so even a key named __proto__ stays a plain key.
  return { pageId, params: Object.fromEntries(entries) };
}

/** Throws unless `token` is a non-empty string; the message never quotes it. */
export function assertToken(token: unknown, name: string): asserts token is string {
  if (typeof token !== 'string' || token === '') {
    throw new TypeError(`${name} must be a non-empty string`);
  }
}

/** True when `text` holds half of a surrogate pair, which no URL or UTF-8 can carry. */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}
