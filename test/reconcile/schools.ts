/**
 * Many schools on one receiver, for the tests of a reconciler of many tenants: each school a mock
 * API of its own (real HTTP) with its own key, seller and school ids, holding paid invoices of
 * which some were recorded by a webhook under the school's tenant and the others are missing.
 * Every school lists the same invoice ids, so records that were not kept apart per tenant, or a
 * recovery under the wrong tenant, would show.
 * @module
 */

import { randomBytes } from 'node:crypto';
import { createSchoolApi } from '../../src/api/index.js';
import type { ReconcileApiFactory } from '../../src/reconcile/index.js';
import type { IdempotencyStore } from '../../src/stores/types.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { invoice, recordWebhook } from './helpers.js';

/** What a client of a school's mock API needs. */
export interface SchoolCredentials {
  readonly baseUrl: string;
  readonly apiKey: string;
  readonly sellerId: number;
  readonly schoolId: number;
}

/** One school: its tenant, its mock API and credentials, and its invoices. */
export interface MockSchool {
  readonly tenant: string;
  readonly mock: MockSchoolApi;
  readonly credentials: SchoolCredentials;
  /** Invoice ids no webhook recorded: a run recovers each once. */
  readonly missing: readonly number[];
  /** Invoice ids a webhook recorded under the tenant: a run counts them handled. */
  readonly recorded: readonly number[];
}

/** The tenant of the `i`-th school: `school-07`. */
export function schoolName(i: number): string {
  return `school-${String(i).padStart(2, '0')}`;
}

/**
 * `count` schools, each listing paid invoices 1 to `invoices` (issued 10 h before the tests'
 * clock), of which `recorded` (a different few in each school) were recorded by a webhook.
 */
export async function startSchools(
  count: number,
  { invoices = 5, recorded = 2 }: { invoices?: number; recorded?: number } = {},
): Promise<MockSchool[]> {
  return Promise.all(
    Array.from({ length: count }, async (_, i) => {
      const ids = Array.from({ length: invoices }, (__, n) => n + 1);
      const done = Array.from({ length: recorded }, (__, n) => ((i + n) % invoices) + 1);
      const credentials = {
        apiKey: `sk_live_${randomBytes(16).toString('hex')}`,
        sellerId: 100 + i,
        schoolId: 1000 + i,
      };
      const mock = await createMockSchoolApi({
        ...credentials,
        lists: { invoices: ids.map((id) => invoice(id)) },
      });
      return {
        tenant: schoolName(i),
        mock,
        credentials: { baseUrl: mock.url, ...credentials },
        missing: ids.filter((id) => !done.includes(id)),
        recorded: done,
      };
    }),
  );
}

/** The records each school's webhooks left in `store`, under its tenant. */
export async function recordWebhooks(
  store: IdempotencyStore,
  schools: readonly MockSchool[],
): Promise<void> {
  for (const { tenant, recorded } of schools) {
    for (const id of recorded) await recordWebhook(store, `invoice:${id}`, tenant);
  }
}

/** `api` of a reconciler of these schools: a client of the tenant's mock, with its key. */
export function apiOfSchools(
  schools: readonly MockSchool[],
  asked: string[] = [],
): ReconcileApiFactory {
  const byTenant = new Map(schools.map((school) => [school.tenant, school.credentials]));
  return ({ tenant }) => {
    asked.push(tenant);
    const credentials = byTenant.get(tenant);
    if (credentials === undefined) throw new Error(`no school ${tenant}`);
    return createSchoolApi(credentials);
  };
}

/** `<tenant> <invoiceId>` of every missing invoice of the schools, sorted. */
export function missingOf(schools: readonly MockSchool[]): string[] {
  return schools.flatMap(({ tenant, missing }) => missing.map((id) => `${tenant} ${id}`)).sort();
}

/** Close every school's mock. */
export async function closeSchools(schools: readonly MockSchool[]): Promise<void> {
  await Promise.all(schools.map(({ mock }) => mock.close()));
}
