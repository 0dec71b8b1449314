/**
 * The round trips of a delivery on one Redis, counted by Redis itself: a PaymentCompleted whose
 * handler is `latestOnly`, with entity records on (the default), takes its key, its invoice's
 * record and its invoice's version in one claim script, and ends all three in one settle script
 * (docs/stores.md); a reconcile page's peek is one MGET.
 *
 * `INFO commandstats` counts every command Redis ran, those a script runs with `redis.call`
 * included; MONITOR tells those (their source is `lua`) from the commands a client sent. So the
 * scripts are counted by commandstats, and every other command it counts must have run inside
 * them. A Redis of this test's own keeps other suites' commands out of the counts.
 *
 * The watchdog's notes (docs/watchdog.md) are no part of a delivery's round trips: the receiver
 * writes them in one script at most once a second, whatever the number of deliveries.
 */

import { createHash, randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { entityKeyOf, recordKeyOf } from '../../src/keys/delivery-key.js';
import { createReceiver } from '../../src/index.js';
import { redisStore } from '../../src/stores/redis.js';
import { WATCH } from '../../src/stores/redis-scripts.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import { fixtureDelivery, SECRET, type Delivery } from '../helpers/deliveries.js';
import { startRedisServer, type RedisServerProcess } from '../helpers/redis.js';

const DELIVERIES = 200;
const PREFIX = `round-trips-${randomUUID()}:`;

let server: RedisServerProcess;
/** The receiver's own client: every command it sends is the store's. */
let client: Redis;
/** The test's client, for the counters. */
let admin: Redis;

beforeAll(async () => {
  server = await startRedisServer();
  client = new Redis(server.url);
  admin = new Redis(server.url);
  await Promise.all([client.ping(), admin.ping()]);
}, 30_000);

afterAll(async () => {
  client?.disconnect();
  admin?.disconnect();
  await server?.close();
});

/** A signed PaymentCompleted about invoice `invoiceId`, with an idempotencyKey of its own. */
function payment(invoiceId: number): Delivery {
  return fixtureDelivery('PaymentCompleted', (data) => {
    (data['payment'] as { invoice: { id: number } }).invoice.id = invoiceId;
  });
}

/** Each command's calls since the stats were reset, by name (`cmdstat_<name>:calls=<n>`). */
async function commandStats(): Promise<Map<string, number>> {
  const stats = await admin.info('commandstats');
  const calls = new Map<string, number>();
  for (const [, name, count] of stats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    calls.set(name!, Number(count));
  }
  return calls;
}

/** The scripts a client sent while {@link monitored} watched, by their SHA-1. */
const scriptsSent = new Map<string, number>();

/** The commands MONITOR sees while `work` runs, as `<source> <command>` (source `lua` or an address). */
async function monitored(work: () => Promise<void>): Promise<Map<string, number>> {
  const monitor = await admin.monitor();
  const seen = new Map<string, number>();
  scriptsSent.clear();
  let marked = false;
  const mark = `round-trips-end-${randomUUID()}`;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    const command = args[0]!.toLowerCase();
    if (command === 'echo' && args[1] === mark) marked = true;
    const at = source === 'lua' ? 'lua' : source;
    if (command === 'evalsha' || command === 'eval') {
      const sha =
        command === 'evalsha' ? args[1]! : createHash('sha1').update(args[1]!).digest('hex');
      scriptsSent.set(sha, (scriptsSent.get(sha) ?? 0) + 1);
    }
    seen.set(`${at} ${command}`, (seen.get(`${at} ${command}`) ?? 0) + 1);
  });
  try {
    await work();
    // MONITOR shows commands in the order Redis ran them: once it shows this one, it showed all.
    await admin.echo(mark);
    await vi.waitFor(() => expect(marked).toBe(true), { timeout: 5000, interval: 10 });
  } finally {
    monitor.disconnect();
  }
  return seen;
}

/** `host:port` of a client's connection, as Redis (and MONITOR) names it. */
async function addressOf(redis: Redis): Promise<string> {
  const info = String(await redis.client('INFO'));
  const address = /(?:^| )addr=(\S+)/.exec(info)?.[1];
  if (address === undefined) throw new Error(`no addr in CLIENT INFO: ${info}`);
  return address;
}

describe('redisStore round trips, counted by Redis', () => {
  it(`takes ${DELIVERIES} latestOnly PaymentCompleted deliveries with one claim script and one settle script each, and no other command`, async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const receiver = createReceiver({ secret: SECRET, store, logger: false });
    const invoices: number[] = [];
    receiver.on(
      'PaymentCompleted',
      (event) => {
        invoices.push(event.data.payment.invoice.id);
      },
      { latestOnly: true },
    );
    const deliver = (delivery: Delivery) =>
      receiver.handle({ method: 'POST', headers: delivery.headers, body: delivery.body });
    // One delivery first, so Redis knows both scripts: a script's first use costs one EVALSHA
    // (NOSCRIPT) and one EVAL, once per server.
    expect((await deliver(payment(1))).outcome).toBe('processed');
    // And the watchdog's script, which the receiver sends at most once a second.
    await store.watch!({
      notes: [],
      keepMs: 60_000,
      keepSummaryMs: 60_000,
      maxFailing: 1,
      now: Date.now(),
      read: '',
    });
    const [clientAddress, adminAddress] = await Promise.all([addressOf(client), addressOf(admin)]);
    const ids = Array.from({ length: DELIVERIES }, (_, i) => 5_000_000 + i);
    const deliveries = ids.map(payment);

    let stats = new Map<string, number>();
    const startedAt = Date.now();
    let endedAt = startedAt;
    const seen = await monitored(async () => {
      await admin.config('RESETSTAT');
      for (const delivery of deliveries) {
        const answer = await deliver(delivery);
        expect(answer, delivery.idempotencyKey).toMatchObject({
          status: 200,
          outcome: 'processed',
        });
      }
      endedAt = Date.now();
      stats = await commandStats();
    });

    const scripts = (stats.get('evalsha') ?? 0) + (stats.get('eval') ?? 0);
    // Only the store's commands and the test's own: CONFIG RESETSTAT then INFO.
    const others = [...stats].filter(
      ([name]) => !['evalsha', 'eval', 'config|resetstat', 'info'].includes(name),
    );
    const sent = [...seen].filter(([at]) => at.startsWith(`${clientAddress} `));
    console.info(
      `redis round trips: ${DELIVERIES} deliveries, ${scripts} scripts (` +
        `${scripts / DELIVERIES} a delivery: ${stats.get('evalsha') ?? 0} EVALSHA, ` +
        `${stats.get('eval') ?? 0} EVAL); commands the receiver's client sent: ` +
        `${JSON.stringify(Object.fromEntries(sent))}; other commands Redis counted: ` +
        `${JSON.stringify(Object.fromEntries(others))}`,
    );

    // Every delivery ran its handler, with its own invoice.
    expect(invoices.slice(1)).toEqual(ids);
    // The watchdog's notes: one script at most once a second of the run, not one a delivery.
    const watches = scriptsSent.get(WATCH.sha) ?? 0;
    expect(watches).toBeLessThanOrEqual(Math.ceil((endedAt - startedAt) / 1000) + 1);
    // At most 2 scripts a delivery: 1 for the claim, 1 for the settle.
    expect(scripts - watches).toBeGreaterThan(0);
    expect(scripts - watches).toBeLessThanOrEqual(2 * DELIVERIES);
    // The receiver's client sent those scripts and nothing else.
    expect(sent).toEqual([[`${clientAddress} evalsha`, stats.get('evalsha') ?? 0]]);
    // Every other command Redis counted ran inside the scripts (MONITOR shows them as lua)...
    for (const [name, calls] of others) expect(seen.get(`lua ${name}`), name).toBe(calls);
    // ...and no one else sent any: MONITOR saw only the receiver, the scripts and this test.
    const sources = new Set([...seen.keys()].map((at) => at.split(' ')[0]));
    expect([...sources].sort()).toEqual([adminAddress, clientAddress, 'lua'].sort());

    // The scripts took and completed the record and the version of each invoice.
    const records = ids.map((id) => `${PREFIX}{${recordKeyOf(`invoice:${id}`, undefined)}}`);
    expect(new Set(await admin.mget(...records))).toEqual(new Set(['D:webhook']));
    const entities = ids.map((id) => `${PREFIX}{${entityKeyOf(`invoice:${id}`, undefined)}}`);
    const versions = await admin.mget(...entities.map((entity) => `${entity}:entity`));
    expect(versions.every((version) => version !== null && Number(version) > 0)).toBe(true);
    expect(await admin.exists(...entities.map((entity) => `${entity}:entity-lease`))).toBe(0);
    // Every answer reached the store all the same: the watchdog sees the last of them.
    const health = await createWatchdog({ receiver }).check();
    expect(health).toMatchObject({ status: 'ok', atRisk: [] });
    expect(Date.parse(health.lastSuccessAt!)).toBeGreaterThanOrEqual(endedAt - 1000);
  });

  it('reads a page of a thousand keys with one MGET and no other command', async () => {
    const store = redisStore({ client, prefix: PREFIX });
    const keys = Array.from({ length: 1000 }, () => `page-${randomUUID()}`);
    await admin.config('RESETSTAT');
    const states = await store.peek(keys);
    const stats = await commandStats();
    expect(states).toHaveLength(1000);
    expect(states.every((state) => state.state === 'free')).toBe(true);
    expect(Object.fromEntries(stats)).toEqual({ 'config|resetstat': 1, mget: 1 });
  });
});
