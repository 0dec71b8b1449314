/**
 * One round of pgBossInbox on whatever pg-boss a consumer directory installs, run against the
 * built package as an app would import it (test/inbox/pg-boss12.test.ts runs it on Node 22 with
 * pg-boss 12): enqueue over real HTTP -> work -> a dead letter -> retryFailed -> done.
 *
 *   DATABASE_URL=postgres://… SCHEMA=pgb_x MODE=boss|connectionString node pg-boss-round.mjs
 *
 * Prints one line `PG_BOSS_ROUND {json}` with what it saw, and exits 1 on any failure.
 * @module
 */

import { createServer } from 'node:http';
import pg from 'pg';
import { PgBoss } from 'pg-boss';
import { createReceiver, memoryStore } from 'schoolhooks';
import { nodeListener } from 'schoolhooks/node';
import { pgBossInbox } from 'schoolhooks/postgres';
import { createDelivery } from 'schoolhooks/testing';

const SECRET = '5f0c8e2a91d4b7363e6a0f9c2b17d8e45f0c8e2a91d4b7363e6a0f9c2b17d8e4';
const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = process.env.SCHEMA ?? 'pgboss';
const mode = process.env.MODE ?? 'boss';

const seen = { mode, node: process.version, steps: [] };
const step = (name, value) => seen.steps.push(value === undefined ? name : { [name]: value });

/** Polls `check` until it returns something truthy, for at most 15 s. */
async function eventually(check) {
  const until = Date.now() + 15_000;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${check}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

let boss;
if (mode === 'boss') {
  boss = new PgBoss({ connectionString: url, schema });
  boss.on('error', () => {});
  await boss.start();
}
const inbox = pgBossInbox({
  ...(mode === 'boss' ? { boss } : { connectionString: url }),
  schema,
  queueName: 'round',
  attempts: 2,
  backoffMs: 50,
});
await inbox.start();
const client = new pg.Client({ connectionString: url });
await client.connect();
seen.schemaVersion = (
  await client.query(`SELECT version FROM "${schema}".version`)
).rows[0].version;
await client.end();

let crmUp = false;
const ran = [];
const receiver = createReceiver({ secret: SECRET, store: memoryStore(), inbox, logger: false });
receiver.on('PaymentCompleted', (event, ctx) => {
  ran.push(`${event.event}@${ctx.attempt}`);
  if (!crmUp) throw new Error('CRM is down');
});
const server = createServer(nodeListener(receiver));
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const endpoint = `http://127.0.0.1:${server.address().port}/`;

try {
  const delivery = createDelivery('PaymentCompleted', undefined, { secret: SECRET });
  const key = JSON.parse(delivery.body).idempotencyKey;
  const sent = await fetch(endpoint, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  step('first', { status: sent.status, outcome: (await sent.json()).outcome });
  const again = await fetch(endpoint, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
  });
  step('repeat', (await again.json()).outcome);
  await inbox.enqueue({
    body: delivery.body,
    signature: delivery.headers.signature,
    event: 'PaymentCompleted',
    idempotencyKey: key,
    receivedAt: new Date().toISOString(),
  });
  step(
    'jobs',
    (await inbox.jobs()).map((job) => job.state),
  );

  const worker = inbox.work(receiver, { pollIntervalMs: 20 });
  const [dead] = await eventually(async () => {
    const failed = await inbox.jobs({ state: 'failed' });
    return failed.length > 0 && failed;
  });
  step('dead', { attemptsMade: dead.attemptsMade, reason: dead.reason, ran: [...ran] });
  if (JSON.stringify(dead).includes(delivery.headers.signature))
    throw new Error('signature listed');

  crmUp = true;
  step('retried', await inbox.retryFailed({ event: 'PaymentCompleted' }));
  const done = await eventually(async () => {
    const job = await inbox.getJob(key);
    return job?.state === 'completed' && job;
  });
  step('done', { outcome: done.outcome, attemptsMade: done.attemptsMade, ran: [...ran] });
  await worker.close();
  await inbox.close();
  step('closed');
} finally {
  server.close();
  await boss?.stop({ graceful: true, wait: true });
}
console.log(`PG_BOSS_ROUND ${JSON.stringify(seen)}`);
