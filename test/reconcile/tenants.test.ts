/**
 * A reconciler of many schools (`createReconciler({ tenants, api })`) over 50 mock APIs (real
 * HTTP), each with its own key: every school's missing invoices recovered once under its tenant,
 * the schools one after another (never two at once), a report per school; a school whose API
 * fails (a refused key, an `api` that throws, a list call failing mid-run) or whose name cannot
 * name a tenant is reported and the others carry on; an abort ends the whole run.
 */

import { afterEach, describe, expect, it } from 'vitest';
import { AuthenticationError, createSchoolApi, isSchoolApiError } from '../../src/api/index.js';
import { createReceiver } from '../../src/receiving/receiver.js';
import {
  ConfigError,
  createReconciler,
  TenantReconcileError,
  type ReconcileApiFactory,
  type ReconcileProgress,
  type ReconcilerOptions,
} from '../../src/reconcile/index.js';
import { memoryStore } from '../../src/stores/memory.js';
import { configRefusal, failureOf } from '../helpers/failure-of.js';
import { sleep } from '../helpers/redis.js';
import { now } from './helpers.js';
import {
  apiOfSchools,
  closeSchools,
  missingOf,
  recordWebhooks,
  startSchools,
  type MockSchool,
} from './schools.js';

const SCHOOLS = 50;
let schools: MockSchool[] = [];

afterEach(async () => {
  await closeSchools(schools);
  schools = [];
});

/**
 * The invoice handler of a run: it notes `<tenant> <invoiceId>` once done, and how many schools
 * had a handler running at once (each handler waits a little, so schools run at once would meet).
 */
function grantsLog(waitMs = 2) {
  const grants: string[] = [];
  const running = new Map<string, number>();
  let mostAtOnce = 0;
  return {
    grants,
    mostAtOnce: () => mostAtOnce,
    async grant(invoiceId: number, tenant: string | undefined): Promise<void> {
      const name = String(tenant);
      running.set(name, (running.get(name) ?? 0) + 1);
      mostAtOnce = Math.max(mostAtOnce, [...running.values()].filter((n) => n > 0).length);
      await sleep(waitMs);
      running.set(name, running.get(name)! - 1);
      grants.push(`${name} ${invoiceId}`);
    },
  };
}

/**
 * The time each school's mock API was read, from its first request to its last: one school
 * after another means no two of these overlap.
 */
function overlappingReads(of: readonly MockSchool[]): string[] {
  const spans = of
    .filter(({ mock }) => mock.requests.length > 0)
    .map(({ tenant, mock }) => ({
      tenant,
      from: mock.requests[0]!.receivedAt,
      to: mock.requests.at(-1)!.receivedAt,
    }))
    .sort((a, b) => a.from - b.from);
  return spans.slice(1).flatMap((span, i) =>
    // Date.now() counts whole ms: a school read in the ms the one before ended is not at once.
    span.from < spans[i]!.to ? [`${spans[i]!.tenant} and ${span.tenant}`] : [],
  );
}

describe('a reconciler of many schools', () => {
  it(`recovers each missing invoice of ${SCHOOLS} schools once under its tenant, one school at a time`, async () => {
    schools = await startSchools(SCHOOLS, { invoices: 5, recorded: 2 });
    const store = memoryStore();
    await recordWebhooks(store, schools);
    const log = grantsLog();
    const asked: string[] = [];
    const reconciler = createReconciler({
      store,
      now,
      tenants: async () => schools.map((school) => school.tenant),
      api: apiOfSchools(schools, asked),
    }).on('invoice', (invoice, ctx) => log.grant(invoice.invoiceId, ctx.tenant));

    const report = await reconciler.run({ since: '2d' });

    expect(log.grants.slice().sort()).toEqual(missingOf(schools));
    expect(log.mostAtOnce()).toBe(1);
    expect(overlappingReads(schools)).toEqual([]);
    // Each school's API asked for when its turn came, in the order tenants() gave them.
    expect(asked).toEqual(schools.map((school) => school.tenant));
    expect(Object.keys(report.tenants)).toEqual(asked);
    for (const { tenant } of schools) {
      expect(report.tenants[tenant]).toMatchObject({
        checked: { invoice: 5, access: 0, certificate: 0, user: 0 },
        handled: 2,
        recovered: 3,
        failed: [],
        complete: true,
      });
      expect(report.tenants[tenant]!.error).toBeUndefined();
    }
    expect(report).toMatchObject({
      checked: { invoice: 5 * SCHOOLS, access: 0, certificate: 0, user: 0 },
      handled: 2 * SCHOOLS,
      recovered: 3 * SCHOOLS,
      missing: [],
      failed: [],
      inFlight: [],
      unrecorded: [],
      complete: true,
      tenantErrors: [],
    });
    expect(report.window).toEqual(report.tenants[schools[0]!.tenant]!.window);

    // Recorded under each tenant: a second run recovers nothing.
    const again = await reconciler.run({ since: '2d' });
    expect([again.recovered, again.handled, again.complete]).toEqual([0, 5 * SCHOOLS, true]);
    expect(log.grants).toHaveLength(3 * SCHOOLS);
  });

  it('reports a school whose API refuses its key (401), and recovers the 49 others', async () => {
    schools = await startSchools(SCHOOLS, { invoices: 3, recorded: 1 });
    const refused = schools[7]!;
    const store = memoryStore();
    await recordWebhooks(store, schools);
    const log = grantsLog(0);
    const schoolsApi = apiOfSchools(schools);
    const api: ReconcileApiFactory = ({ tenant }) =>
      tenant === refused.tenant
        ? createSchoolApi({ ...refused.credentials, apiKey: 'sk_live_revoked0000000000000000000' })
        : schoolsApi({ tenant });
    const reconciler = createReconciler({
      store,
      now,
      tenants: schools.map((school) => school.tenant),
      api,
    }).on('invoice', (invoice, ctx) => log.grant(invoice.invoiceId, ctx.tenant));

    const report = await reconciler.run({ since: '2d' });

    const others = schools.filter((school) => school !== refused);
    expect(log.grants.slice().sort()).toEqual(missingOf(others));
    const { error, ...counts } = report.tenants[refused.tenant]!;
    expect(error).toBeInstanceOf(TenantReconcileError);
    expect([error!.code, error!.tenant]).toEqual(['api_unavailable', refused.tenant]);
    expect(error!.cause).toBeInstanceOf(AuthenticationError);
    expect((error!.cause as AuthenticationError).status).toBe(401);
    expect(error!.message).toMatch(/^tenant "school-07": its API failed/);
    expect(error!.message).not.toContain('sk_live');
    expect(counts).toMatchObject({ recovered: 0, complete: false });
    expect(report.tenantErrors).toEqual([error]);
    expect(report).toMatchObject({ recovered: 2 * (SCHOOLS - 1), failed: [], complete: false });
    for (const { tenant } of others) expect(report.tenants[tenant]!.complete).toBe(true);
  });

  it('reports a school whose api function throws or gives no client, and runs the next', async () => {
    schools = await startSchools(3, { invoices: 2, recorded: 0 });
    const [a, b, c] = schools;
    const schoolsApi = apiOfSchools(schools);
    const lost = new Error('vault sealed');
    const api: ReconcileApiFactory = async ({ tenant }) => {
      if (tenant === a!.tenant) throw lost;
      if (tenant === b!.tenant) return {} as ReturnType<typeof createSchoolApi>;
      return schoolsApi({ tenant });
    };
    const log = grantsLog(0);
    const reconciler = createReconciler({
      store: memoryStore(),
      now,
      tenants: () => schools.map((school) => school.tenant),
      api,
    }).on('invoice', (invoice, ctx) => log.grant(invoice.invoiceId, ctx.tenant));

    const report = await reconciler.run({ since: '2d' });

    expect(log.grants.slice().sort()).toEqual(missingOf([c!]));
    const codes = report.tenantErrors.map(({ code, tenant, cause }) => ({ code, tenant, cause }));
    expect(codes).toEqual([
      { code: 'api_unavailable', tenant: a!.tenant, cause: lost },
      { code: 'api_unavailable', tenant: b!.tenant, cause: expect.any(ConfigError) },
    ]);
    expect(report.tenantErrors[0]!.message).toBe(
      'tenant "school-00": api gave no API client for it; not read: vault sealed',
    );
    expect(report.tenants[a!.tenant]).toMatchObject({
      checked: { invoice: 0 },
      recovered: 0,
      complete: false,
    });
    // Nothing was asked of the two schools' mocks.
    expect([a!.mock.requests.length, b!.mock.requests.length]).toEqual([0, 0]);
    expect(report.tenants[c!.tenant]).toMatchObject({ recovered: 2, complete: true });
  });

  it('keeps what a school recovered before its API failed mid-run, and runs the next', async () => {
    schools = await startSchools(2, { invoices: 4, recorded: 0 });
    const [a, b] = schools;
    const log = grantsLog(0);
    let refuse = true;
    const reconciler = createReconciler({
      store: memoryStore(),
      now,
      take: 2,
      tenants: [a!.tenant, b!.tenant],
      api: apiOfSchools(schools),
    }).on('invoice', async (invoice, ctx) => {
      await log.grant(invoice.invoiceId, ctx.tenant);
      // After its first recovery, school a's key is refused once.
      if (ctx.tenant === a!.tenant && refuse) {
        refuse = false;
        a!.mock.failNext(401);
      }
    });

    const report = await reconciler.run({ since: '2d' });

    const first = report.tenants[a!.tenant]!;
    expect(first.error?.code).toBe('api_unavailable');
    expect(isSchoolApiError(first.error?.cause)).toBe(true);
    expect(first.recovered).toBe(2);
    expect(first.complete).toBe(false);
    expect(report.tenants[b!.tenant]).toMatchObject({ recovered: 4, complete: true });
    expect(report.recovered).toBe(6);
    // A second run recovers the rest of school a, and nothing twice.
    const again = await reconciler.run({ since: '2d' });
    expect(again).toMatchObject({ recovered: 2, handled: 6, complete: true });
    expect(new Set(log.grants).size).toBe(8);
    expect(log.grants).toHaveLength(8);
  });

  it('reports the names that cannot name a tenant, and runs a name given twice once', async () => {
    schools = await startSchools(2, { invoices: 1, recorded: 0 });
    const [a, b] = schools;
    const names = [a!.tenant, '', 'x'.repeat(257), 42, a!.tenant, 'a\u0000b', b!.tenant];
    const log = grantsLog(0);
    const reconciler = createReconciler({
      store: memoryStore(),
      now,
      tenants: async () => names as string[],
      api: apiOfSchools(schools),
    }).on('invoice', (invoice, ctx) => log.grant(invoice.invoiceId, ctx.tenant));

    const report = await reconciler.run({ since: '2d' });

    expect(log.grants.slice().sort()).toEqual(missingOf(schools));
    // An object's keys: a name that reads as an index ('42') comes first.
    expect(Object.keys(report.tenants)).toEqual([
      '42',
      a!.tenant,
      '',
      'x'.repeat(257),
      'a\u0000b',
      b!.tenant,
    ]);
    expect(report.tenantErrors.map(({ code, tenant }) => [code, tenant])).toEqual([
      ['unknown_tenant', ''],
      ['unknown_tenant', 'x'.repeat(257)],
      ['unknown_tenant', '42'],
      ['unknown_tenant', 'a\u0000b'],
    ]);
    expect(report.tenantErrors[2]!.message).toBe(
      'tenant "42": is a number, not a tenant name (a string); not read',
    );
    expect(report).toMatchObject({ recovered: 2, complete: false });
  });

  it('gives each school its own records, ctx.tenant and lists of entities', async () => {
    schools = await startSchools(2, { invoices: 2, recorded: 0 });
    const [a, b] = schools;
    const store = memoryStore();
    const seen: string[] = [];
    const reconciler = createReconciler({
      store,
      now,
      tenants: [a!.tenant, b!.tenant],
      api: apiOfSchools(schools),
    }).on('invoice', (invoice, ctx) => {
      seen.push(`${ctx.tenant} ${ctx.entity}`);
      if (ctx.tenant === b!.tenant && invoice.invoiceId === 2) throw new Error('crm hiccup');
    });

    const dry = await reconciler.run({ since: '2d', dryRun: true });
    expect(dry.missing).toEqual([
      { kind: 'invoice', id: '1', tenant: a!.tenant },
      { kind: 'invoice', id: '2', tenant: a!.tenant },
      { kind: 'invoice', id: '1', tenant: b!.tenant },
      { kind: 'invoice', id: '2', tenant: b!.tenant },
    ]);
    expect(dry.tenants[a!.tenant]!.missing).toEqual([
      { kind: 'invoice', id: '1' },
      { kind: 'invoice', id: '2' },
    ]);

    const report = await reconciler.run({ since: '2d' });
    expect(seen).toEqual([
      `${a!.tenant} invoice:1`,
      `${a!.tenant} invoice:2`,
      `${b!.tenant} invoice:1`,
      `${b!.tenant} invoice:2`,
    ]);
    expect(report.failed).toEqual([
      { kind: 'invoice', id: '2', tenant: b!.tenant, error: expect.anything() },
    ]);
    expect(report.failed[0]!.error.code).toBe('handler_failed');
    expect(report).toMatchObject({ recovered: 3, complete: false, tenantErrors: [] });
    expect(report.tenants[a!.tenant]!.complete).toBe(true);
    expect(report.tenants[b!.tenant]!.complete).toBe(false);
  });

  it('tells onProgress the school it reads', async () => {
    schools = await startSchools(2, { invoices: 3, recorded: 0 });
    const progress: ReconcileProgress[] = [];
    const reconciler = createReconciler({
      store: memoryStore(),
      now,
      take: 2,
      tenants: schools.map((school) => school.tenant),
      api: apiOfSchools(schools),
    }).on('invoice', () => {});
    await reconciler.run({ since: '2d', onProgress: (p) => progress.push(p) });
    expect(progress.map(({ tenant, kind, checked }) => [tenant, kind, checked.invoice])).toEqual([
      [schools[0]!.tenant, 'invoice', 2],
      [schools[0]!.tenant, 'invoice', 3],
      [schools[1]!.tenant, 'invoice', 2],
      [schools[1]!.tenant, 'invoice', 3],
    ]);
  });

  it('stops the whole run when aborted: no school after it is read', async () => {
    schools = await startSchools(3, { invoices: 2, recorded: 0 });
    const controller = new AbortController();
    const stop = new Error('shutting down');
    const asked: string[] = [];
    const reconciler = createReconciler({
      store: memoryStore(),
      now,
      tenants: schools.map((school) => school.tenant),
      api: apiOfSchools(schools, asked),
    }).on('invoice', (_invoice, ctx) => {
      if (ctx.tenant === schools[1]!.tenant) controller.abort(stop);
    });
    const error = await failureOf(reconciler.run({ since: '2d', signal: controller.signal }));
    expect(error).toBe(stop);
    expect(asked).toEqual([schools[0]!.tenant, schools[1]!.tenant]);
    expect(schools[2]!.mock.requests).toEqual([]);
  });

  it('ends the run when tenants() fails or gives no list', async () => {
    const failing = createReconciler({
      store: memoryStore(),
      now,
      tenants: async () => {
        throw new Error('database down');
      },
      api: () => {
        throw new Error('never asked');
      },
    }).on('invoice', () => {});
    expect((await failureOf(failing.run({ since: '2d' }))).message).toBe('database down');

    const noList = createReconciler({
      store: memoryStore(),
      now,
      tenants: async () => 'school-a' as unknown as string[],
      api: () => {
        throw new Error('never asked');
      },
    }).on('invoice', () => {});
    const error = await failureOf(noList.run({ since: '2d' }));
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).code).toBe('config');
  });
});

describe('the options of a reconciler of many schools', () => {
  const api = apiOfSchools([]);
  const client = createSchoolApi({
    baseUrl: 'http://127.0.0.1:1',
    apiKey: 'k',
    sellerId: 1,
    schoolId: 1,
  });
  const make = (options: Partial<Record<keyof ReconcilerOptions, unknown>>) =>
    configRefusal(() =>
      createReconciler({ store: memoryStore(), ...options } as unknown as ReconcilerOptions),
    ).message;

  it('refuses tenants with an api that is no function, and an api function without tenants', () => {
    expect(make({ tenants: ['a'], api: client })).toBe(
      'with tenants, api must be a function that gives each school\u2019s API client: ' +
        'api: ({ tenant }) => createSchoolApi(…)',
    );
    expect(make({ api })).toBe(
      'api is a function of the tenant only on a reconciler of many schools: give tenants ' +
        '(the schools it reads), or the school\u2019s API client (createSchoolApi from schoolhooks/api)',
    );
  });

  it('refuses tenant beside tenants, and tenants that are neither a list nor a function', () => {
    expect(make({ tenants: ['a'], tenant: 'a', api })).toMatch(
      /^tenant and tenants cannot go together/,
    );
    for (const tenants of ['school-a', 5, null, { a: 1 }]) {
      expect(make({ tenants, api })).toMatch(/^tenants must be a list of tenant names/);
    }
  });

  it('takes a receiver, and what a run resolves to carries each school', async () => {
    const receiver = createReceiver({ secret: 'a'.repeat(64) });
    const reconciler = createReconciler({ receiver, tenants: [], api, now }).on(
      'invoice',
      () => {},
    );
    const report = await reconciler.run({ since: '2d' });
    expect(report).toMatchObject({ tenants: {}, tenantErrors: [], recovered: 0, complete: true });
  });
});
