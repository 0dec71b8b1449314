/**
 * Builds the web sign-in link `<school_url>/<path>?___uat=<token>` (docs/platform.md#sign-in-links).
 * @module
 */

import { hasLoneSurrogate } from './checks.js';
import { isSecureUrl } from './is-secure-url.js';

/** The query parameter that carries the session token. */
export const SIGN_IN_TOKEN_PARAM = '___uat';

/**
 * A link that signs the user in to the school's web app and opens `path`. The query and the
 * fragment that `path` may carry are kept, `___uat` is appended last. The school URL must be
 * https:// (http:// only for localhost, 127.0.0.1 and [::1]): the token gives full access to the
 * account for about two years.
 *
 * Send the link to its user only; never log or publish it. Errors never quote the token.
 *
 * @example
 * ```ts
 * buildSignInUrl('https://school.example.com', 'courses/12?tab=lessons', session.token);
 * // https://school.example.com/courses/12?tab=lessons&___uat=…
 * ```
 */
export function buildSignInUrl(schoolUrl: string | URL, path: string, token: string): string {
  const school = parseSchoolUrl(schoolUrl);
  if (typeof path !== 'string') throw new TypeError('path must be a string');
  if (/^[A-Za-z][A-Za-z0-9+.-]*:/.test(path)) {
    throw new TypeError('path must be a path on the school, not an absolute URL');
  }
  if (typeof token !== 'string' || token === '' || hasLoneSurrogate(token)) {
    throw new TypeError('token must be a non-empty, well-formed string');
  }

  // Joined by hand: URL resolution would drop a path the school URL has (https://host/school/).
  const base = school.href.replace(/\/+$/, '');
  const url = new URL(`${base}/${path.replace(/^\/+/, '')}`);
  if (url.origin !== school.origin) throw new TypeError('path must stay on the school');
  if (url.searchParams.has(SIGN_IN_TOKEN_PARAM)) {
    throw new TypeError(`path already carries a ${SIGN_IN_TOKEN_PARAM} parameter`);
  }
  // Appended as text, so the path's own query keeps its exact encoding.
  const pair = `${SIGN_IN_TOKEN_PARAM}=${encodeURIComponent(token)}`;
  url.search = url.search === '' ? pair : `${url.search.slice(1)}&${pair}`;
  return url.href;
}

function parseSchoolUrl(schoolUrl: string | URL): URL {
  let url: URL;
  try {
    url = new URL(schoolUrl);
  } catch {
    throw new TypeError('schoolUrl must be an absolute URL such as https://school.example.com');
  }
  if (!isSecureUrl(url)) {
    throw new TypeError(
      'schoolUrl must use https:// (http:// only for localhost, 127.0.0.1 and [::1]): the link carries a session token',
    );
  }
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') {
    throw new TypeError(
      'schoolUrl must be the school address, without credentials, query or fragment',
    );
  }
  return url;
}
