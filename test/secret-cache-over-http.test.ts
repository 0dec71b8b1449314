/**
 * The cache of a secret lookup, over real HTTP (the node adapter on a loopback port, its route
 * `/t/<tenant>`), with a lookup that counts what it is asked: names that are no tenant's are
 * cached apart from the tenants with secrets, so a flood of them never evicts a school's; and
 * `receiver.forgetSecret(tenant?)` makes the next delivery look the secret up again
 * (docs/tenants.md).
 */

import { randomUUID } from 'node:crypto';
import { Agent, createServer, request } from 'node:http';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { createReceiver, type Receiver, type SecretLookupAnswer } from '../src/index.js';
import { listen, post, type AdapterServer } from './adapters/suite.js';
import { deferred, type Delivery } from './helpers/deliveries.js';
import { inParallel } from './helpers/in-parallel.js';
import {
  lookupIn,
  tenantDelivery,
  tenantOfRequest,
  tenantPath,
  tenantSecret,
  tenantSecrets,
} from './helpers/tenants.js';

const servers: AdapterServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/**
 * A receiver whose lookup reads `secrets` (a test changes the map to add a school or rotate its
 * secret) through `around` when given, served by the node adapter; `asked` counts its lookups.
 */
async function serve(
  secrets: Map<string, string | readonly string[]>,
  around?: (tenant: string, answer: SecretLookupAnswer) => Promise<SecretLookupAnswer>,
) {
  const asked = new Map<string, number>();
  const read = lookupIn(secrets);
  const receiver = createReceiver({
    logger: false,
    secret: async (request) => {
      asked.set(request.tenant, (asked.get(request.tenant) ?? 0) + 1);
      const answer = await read(request);
      return around === undefined ? answer : around(request.tenant, answer);
    },
  }).onAny(() => {});
  const server = await listen(
    createServer(nodeListener(receiver, { tenant: tenantOfRequest })).listen(0, '127.0.0.1'),
    '',
  );
  servers.push(server);
  /** POST a fresh delivery signed with `secret` (the tenant's own by default) to its route. */
  const deliver = async (tenant: string, secret = tenantSecret(tenant)): Promise<string> => {
    const delivery = tenantDelivery(randomUUID(), new Date().toISOString(), secret);
    const { status, body } = await post(`${server.url}/${tenantPath(tenant)}`, delivery);
    return `${status} ${(body as { outcome: string }).outcome}`;
  };
  /** Lookups made so far, of every tenant, or of those named. */
  const lookups = (tenants?: readonly string[]): number =>
    (tenants ?? [...asked.keys()]).reduce((sum, tenant) => sum + (asked.get(tenant) ?? 0), 0);
  return { receiver, deliver, lookups, url: server.url };
}

const agent = new Agent({ keepAlive: true });
afterAll(() => agent.destroy());

/** POST `delivery` with node:http on kept-alive connections (a flood, fast); resolves to the status. */
function postKeptAlive(url: string, { body, headers }: Delivery): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers, agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const SCHOOLS = Array.from({ length: 50 }, (_, i) => `school-${i + 1}`);

describe('names that are no tenant’s, cached apart', () => {
  it('10 000 deliveries for random unknown names, then one for each of 50 schools: 0 new lookups for the schools', async () => {
    // The default secretCacheSize (10 000): in one cache of both kinds, the flood evicted them all.
    const { deliver, lookups, url } = await serve(tenantSecrets(SCHOOLS));
    for (const school of SCHOOLS) expect(await deliver(school)).toBe('200 processed');
    expect(lookups(SCHOOLS)).toBe(50);

    const strangers = Array.from({ length: 10_000 }, () => `nobody-${randomUUID()}`);
    const answers = new Map<number, number>();
    // One signed body for all: what they are answered is decided before it is verified.
    const delivery = tenantDelivery(randomUUID(), new Date().toISOString(), tenantSecret('x'));
    await inParallel(strangers, 16, async (name) => {
      const status = await postKeptAlive(`${url}/${tenantPath(name)}`, delivery);
      answers.set(status, (answers.get(status) ?? 0) + 1);
    });
    expect(answers).toEqual(new Map([[404, 10_000]]));
    expect(lookups(strangers)).toBe(10_000);

    for (const school of SCHOOLS) expect(await deliver(school)).toBe('200 processed');
    expect(lookups(SCHOOLS)).toBe(50);
  }, 60_000);

  it('a flood of one unknown name costs one lookup', async () => {
    const { lookups, url } = await serve(tenantSecrets(SCHOOLS));
    const delivery = tenantDelivery(randomUUID(), new Date().toISOString(), tenantSecret('x'));
    const statuses: number[] = [];
    await inParallel(
      Array.from({ length: 1000 }, () => 'school-404'),
      16,
      async (name) => {
        statuses.push(await postKeptAlive(`${url}/${tenantPath(name)}`, delivery));
      },
    );
    expect(new Set(statuses)).toEqual(new Set([404]));
    expect(lookups(['school-404'])).toBe(1);
  });
});

describe('receiver.forgetSecret(tenant?)', () => {
  it('takes a rotated secret at the next delivery of that school, and asks for no other school', async () => {
    const secrets = tenantSecrets(['school-a', 'school-b']);
    const { receiver, deliver, lookups } = await serve(secrets);
    const next = tenantSecret('school-a', 1);
    expect(await deliver('school-a')).toBe('200 processed');
    expect(await deliver('school-b')).toBe('200 processed');

    // The new secret is added to the school's list: until forgotten, the cached list is used.
    secrets.set('school-a', [tenantSecret('school-a'), next]);
    expect(await deliver('school-a', next)).toBe('401 invalid_signature');
    receiver.forgetSecret('school-a');
    expect(await deliver('school-a', next)).toBe('200 processed');
    expect(await deliver('school-a')).toBe('200 processed');
    expect(await deliver('school-b')).toBe('200 processed');
    expect([lookups(['school-a']), lookups(['school-b'])]).toEqual([2, 1]);
  });

  it('forgets a "no such school" too: a school added a moment ago gets its next delivery', async () => {
    const secrets = tenantSecrets(['school-a']);
    const { receiver, deliver, lookups } = await serve(secrets);
    expect(await deliver('school-new')).toBe('404 unknown_tenant');
    secrets.set('school-new', tenantSecret('school-new'));
    expect(await deliver('school-new')).toBe('404 unknown_tenant');
    receiver.forgetSecret('school-new');
    expect(await deliver('school-new')).toBe('200 processed');
    expect(lookups(['school-new'])).toBe(2);
  });

  it('without a tenant, forgets every school’s secrets and every unknown name', async () => {
    const secrets = tenantSecrets(['school-a', 'school-b']);
    const { receiver, deliver, lookups } = await serve(secrets);
    expect(await deliver('school-a')).toBe('200 processed');
    expect(await deliver('school-b')).toBe('200 processed');
    expect(await deliver('school-c')).toBe('404 unknown_tenant');
    secrets.set('school-c', tenantSecret('school-c'));
    receiver.forgetSecret();
    for (const school of ['school-a', 'school-b', 'school-c']) {
      expect(await deliver(school)).toBe('200 processed');
      expect(await deliver(school)).toBe('200 processed');
    }
    expect(lookups()).toBe(6);
  });

  it('does not cache the answer of a lookup under way when it was called', async () => {
    const secrets = tenantSecrets(['school-a']);
    const held = deferred();
    let hold = true;
    const { receiver, deliver, lookups } = await serve(secrets, async (_tenant, answer) => {
      if (hold) await held.promise;
      return answer;
    });
    // The lookup has read the old secret, and is slow to answer: the secret changes meanwhile.
    const first = deliver('school-a');
    await expect.poll(() => lookups(['school-a'])).toBe(1);
    const next = tenantSecret('school-a', 1);
    secrets.set('school-a', next);
    receiver.forgetSecret('school-a');
    hold = false;
    held.resolve();
    expect(await first).toBe('200 processed');
    expect(await deliver('school-a', next)).toBe('200 processed');
    expect(lookups(['school-a'])).toBe(2);
  });

  it('does nothing on a receiver whose secret is not a lookup', async () => {
    const receiver: Receiver = createReceiver({ secret: tenantSecret('any'), logger: false });
    expect(() => receiver.forgetSecret('school-a')).not.toThrow();
    expect(() => receiver.forgetSecret()).not.toThrow();
  });
});
