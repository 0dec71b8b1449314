/**
 * Takes a deep link apart again (docs/platform.md#deep-links).
 * @module
 */

import { decodeBase64Url } from './base64url.js';
import { assertDomain, assertToken, checkPage, normalizeScheme } from './checks.js';
import type { DeepLink, OpenPageAction } from './types.js';

/**
 * Parses a deep link made by `buildDeepLink` (or by hand to the same format) into the options
 * that build it: `parseDeepLink(buildDeepLink(options))` deep-equals `options` written in their
 * canonical form, which is
 *
 * - `scheme` given, in lower case;
 * - `loginToken` absent when there is none, `actions` absent when there are none (never `[]`);
 * - pages as plain `{ pageId, params }` (what `lessonPage` and `coursePage` return), actions as
 *   `{ type: 'open-page', pageId, params }`, without other keys.
 *
 * Throws a TypeError naming the part at fault, never quoting the link (it may hold a token).
 *
 * @example
 * ```ts
 * const { domain, page, loginToken } = parseDeepLink(link);
 * ```
 */
export function parseDeepLink(link: string | URL): DeepLink {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    // No cause: Node's URL error keeps the input, which may hold a token.
    throw new TypeError('not a deep link: not an absolute URL');
  }
  const scheme = normalizeScheme(url.protocol.slice(0, -1));
  const data = url.searchParams.getAll('data');
  if (url.host !== '' || url.pathname !== '' || data.length !== 1 || data[0] === undefined) {
    throw new TypeError('not a deep link: expected <scheme>://?data=<query>');
  }

  const inner = new URLSearchParams(data[0]);
  if (inner.get('action') !== 'open-page') {
    throw new TypeError('not a deep link: action must be open-page');
  }
  const domain = inner.get('domain');
  assertDomain(domain);
  const page = checkPage(
    { pageId: inner.get('pageId'), params: parseJson(inner.get('params'), 'params') },
    'page',
  );
  const result: DeepLink = { scheme, domain, page };

  const extra = inner.get('extra');
  if (extra !== null) {
    const { loginToken, actions } = parseExtra(extra);
    if (loginToken !== undefined) result.loginToken = loginToken;
    if (actions.length > 0) result.actions = actions;
  }
  return result;
}

function parseExtra(extra: string): { loginToken: string | undefined; actions: OpenPageAction[] } {
  let decoded: unknown;
  try {
    decoded = JSON.parse(decodeBase64Url(extra));
  } catch {
    // No cause: a JSON error may quote the text, and the text holds the token.
    throw new TypeError('not a deep link: extra is not base64url of JSON');
  }
  if (typeof decoded !== 'object' || decoded === null || !('actions' in decoded)) {
    throw new TypeError('not a deep link: extra must be {"actions":[…]}');
  }
  if (!Array.isArray(decoded.actions)) {
    throw new TypeError('not a deep link: extra.actions must be an array');
  }
  let loginToken: string | undefined;
  const actions: OpenPageAction[] = [];
  decoded.actions.forEach((action: unknown, index) => {
    const name = `extra.actions[${index}]`;
    if (typeof action !== 'object' || action === null || !('type' in action)) {
      throw new TypeError(`not a deep link: ${name} is not an action`);
    }
    if (action.type === 'open-page') {
      const { pageId, params } = checkPage(action, name);
      actions.push({ type: 'open-page', pageId, params });
    } else if (action.type === 'login-by-token') {
      // buildDeepLink puts the sign-in first; anywhere else it is not a link it made.
      if (index !== 0) throw new TypeError(`not a deep link: ${name} signs in after other actions`);
      const token = 'token' in action ? action.token : undefined;
      assertToken(token, `${name}.token`);
      loginToken = token;
    } else {
      throw new TypeError(`not a deep link: ${name} is not open-page or login-by-token`);
    }
  });
  return { loginToken, actions };
}

function parseJson(text: string | null, name: string): unknown {
  if (text === null) throw new TypeError(`not a deep link: ${name} is missing`);
  try {
    return JSON.parse(text);
  } catch {
    throw new TypeError(`not a deep link: ${name} is not JSON`);
  }
}
