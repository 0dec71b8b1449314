/**
 * Many schools on one endpoint, for the store and inbox tests over HTTP: each tenant's own
 * secret (made with node:crypto, not by the code under test), the route that names a tenant
 * (`/t/<tenant, percent-encoded>`, read back by the node adapter's `tenant` option), and tenant
 * names that a careless key scheme would merge or mangle.
 */

import { createHmac } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { SecretLookup } from '../../src/receiving/secret-source.js';
import { createTestDelivery, type Delivery } from './deliveries.js';

/**
 * Tenant names a route can carry, every one a tenant name (not empty, at most 256 UTF-16 code
 * units, no U+0000 and no lone surrogate): spaces, `/` (encoded in the route), `~` and
 * JSON-looking names (the characters the derived keys are made of), names that differ only by
 * case or by a percent escape, the longest name, and emoji (pairs of surrogates) up to it.
 */
export const UNUSUAL_TENANTS: readonly string[] = [
  'school a',
  'school  a',
  ' school a',
  'a/b',
  'a%2Fb',
  'a',
  'A',
  '~',
  '~~',
  '["x"]',
  '"x"',
  'x',
  'a","b',
  '~["tenant","x","k"]',
  '~["run","x"]',
  'x'.repeat(256),
  '🏫'.repeat(128),
  'школа 🎓',
];

/** The secretKey of a tenant's endpoint (`endpoint` tells a school's endpoints apart): 64 hex digits. */
export function tenantSecret(tenant: string, endpoint = 0): string {
  return createHmac('sha256', `tenant-endpoint-${endpoint}`).update(tenant).digest('hex');
}

/** Each tenant with the secret of its one endpoint. */
export function tenantSecrets(tenants: Iterable<string>): Map<string, string | readonly string[]> {
  return new Map([...tenants].map((tenant) => [tenant, tenantSecret(tenant)]));
}

/**
 * The secret lookup of a receiver: what `secrets` holds for the tenant now (none for a tenant it
 * does not hold), so a test rotates or removes a tenant's secret by changing the map.
 */
export function lookupIn(secrets: ReadonlyMap<string, string | readonly string[]>): SecretLookup {
  return ({ tenant }) => secrets.get(tenant);
}

/** The path of a tenant's route, relative to the server's `/`. */
export function tenantPath(tenant: string): string {
  return `t/${encodeURIComponent(tenant)}`;
}

/** The node adapter's `tenant` option: the tenant a `/t/<tenant>` route names, none elsewhere. */
export function tenantOfRequest(req: IncomingMessage): string | undefined {
  const match = /^\/t\/([^/?]+)/.exec(req.url ?? '');
  return match === null ? undefined : decodeURIComponent(match[1]!);
}

/** A delivery of `idempotencyKey` signed with `secret` (a tenant's): one body per key and time. */
export function tenantDelivery(
  idempotencyKey: string,
  timestamp: string,
  secret: string,
): Delivery {
  return createTestDelivery(
    'UserSignedIn',
    { user: { id: 1 } },
    { idempotencyKey, timestamp, secret },
  );
}
