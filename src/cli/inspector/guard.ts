/**
 * What keeps the inspector a local tool: its endpoints answer only requests addressed to an IP
 * address or `localhost` (a DNS-rebinding page addresses them by its own domain name), and the
 * ones that act (replay, send) only requests the page itself makes (a custom header, which a
 * cross-site form or a simple cross-origin fetch cannot add without a preflight we never allow,
 * and a same-origin `Origin` and `Sec-Fetch-Site` when the browser sends them).
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';

/** The header the page adds to every request that acts. */
export const INSPECTOR_HEADER = 'x-schoolhooks-inspector';

/** Sent with every inspector answer: nothing cached, nothing framed, nothing loaded from afar. */
export const SECURITY_HEADERS = {
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
    "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
} as const;

/** Why a request to the inspector was turned away. */
export interface Refusal {
  status: number;
  error: string;
}

/** True for `localhost`, `*.localhost`, an IPv4 address or a bracketed IPv6 address. */
export function isLocalOrIpHost(host: string): boolean {
  const name = host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0];
  if (name === undefined || name === '') return false;
  if (name.startsWith('[')) return /^\[[0-9a-f:.]+\]$/i.test(name);
  const lower = name.toLowerCase();
  return (
    lower === 'localhost' ||
    lower.endsWith('.localhost') ||
    /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.test(lower)
  );
}

/** Undefined when `req` may be answered; else why not. */
export function checkRequest(req: IncomingMessage): Refusal | undefined {
  const host = req.headers.host ?? '';
  if (!isLocalOrIpHost(host)) return { status: 403, error: 'host_not_allowed' };
  if (req.method === 'GET' || req.method === 'HEAD') return undefined;
  if (req.headers[INSPECTOR_HEADER] !== '1') {
    return { status: 403, error: 'inspector_header_required' };
  }
  const origin = req.headers.origin;
  if (origin !== undefined && origin !== `http://${host}`) {
    return { status: 403, error: 'cross_origin' };
  }
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { status: 403, error: 'cross_site' };
  }
  return undefined;
}

/** Answer with `body` as JSON and the {@link SECURITY_HEADERS} (the adapters' `sendJson` sends none). */
export function sendGuardedJson(res: ServerResponse, status: number, body: unknown): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}
