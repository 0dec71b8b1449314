/**
 * Builds the app's deep link `serviceapp://?data=…` (docs/platform.md#deep-links).
 * @module
 */

import { encodeBase64Url } from './base64url.js';
import { assertDomain, assertToken, checkPage, normalizeScheme } from './checks.js';
import type { DeepLinkAction, DeepLinkOptions } from './types.js';

/** The URL scheme the app registers. */
export const DEFAULT_DEEP_LINK_SCHEME = 'serviceapp';

/**
 * Builds a deep link that opens the app on `page`, signed in first when `loginToken` is given.
 *
 * The inner query is built with URLSearchParams in the order `action=open-page`, `domain`,
 * `pageId`, `params` (JSON, string values), `extra`; then encoded whole with encodeURIComponent
 * into `data` (the double encoding of 4.2). `extra`, present only when there are actions, is
 * unpadded base64url of `{"actions":[…]}` with `login-by-token` first: the app runs the actions
 * in order, then opens `page`.
 *
 * A link with a token signs in whoever opens it: send it to that user only, never publish it.
 *
 * @example
 * ```ts
 * const link = buildDeepLink({
 *   domain: 'school.example.com',
 *   page: lessonPage({ courseId: 12, lessonId: 345 }),
 *   loginToken: session.token,
 * });
 * // serviceapp://?data=action%3Dopen-page%26domain%3Dschool.example.com%26pageId%3D…%26extra%3D…
 * ```
 */
export function buildDeepLink({
  domain,
  page,
  loginToken,
  actions = [],
  scheme = DEFAULT_DEEP_LINK_SCHEME,
}: DeepLinkOptions): string {
  const prefix = normalizeScheme(scheme);
  assertDomain(domain);
  const target = checkPage(page, 'page');
  if (!Array.isArray(actions)) throw new TypeError('actions must be an array');

  const extra: DeepLinkAction[] = [];
  if (loginToken !== undefined) {
    assertToken(loginToken, 'loginToken');
    extra.push({ type: 'login-by-token', token: loginToken });
  }
  actions.forEach((action: unknown, index) => {
    const name = `actions[${index}]`;
    if (typeof action !== 'object' || action === null || !('type' in action)) {
      throw new TypeError(`${name} must be an open-page action`);
    }
    if (action.type !== 'open-page') {
      // One way to sign in keeps login-by-token first and the link canonical.
      throw new TypeError(
        `${name}: only open-page actions go in actions; pass loginToken to sign in`,
      );
    }
    const { pageId, params } = checkPage(action, name);
    extra.push({ type: 'open-page', pageId, params });
  });

  const inner = new URLSearchParams([
    ['action', 'open-page'],
    ['domain', domain],
    ['pageId', target.pageId],
    ['params', JSON.stringify(target.params)],
  ]);
  if (extra.length > 0) inner.append('extra', encodeBase64Url(JSON.stringify({ actions: extra })));
  return `${prefix}://?data=${encodeURIComponent(inner.toString())}`;
}
