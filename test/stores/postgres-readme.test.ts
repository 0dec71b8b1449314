/**
 * The recipe "an ORM on the same transaction" of docs/postgres.md, run as written: Drizzle on
 * `ctx.transaction`, so the ORM's writes and the delivery's completion are one commit.
 */

import { drizzle } from 'drizzle-orm/node-postgres';
import { doublePrecision, integer, pgTable, text } from 'drizzle-orm/pg-core';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReceiver } from '../../src/receiving/receiver.js';
import { postgresStore } from '../../src/stores/postgres.js';
import { SECRET, fixtureDelivery } from '../helpers/deliveries.js';
import {
  dropTables,
  uniqueTable,
  useTestPostgres,
  type TestPostgres,
} from '../helpers/postgres.js';

let database: TestPostgres;
let pool: pg.Pool;
const deliveries = uniqueTable('sh_readme');
const grantsTable = uniqueTable('grants');

// As in docs/postgres.md, with this run's own table names.
const grants = pgTable(grantsTable, {
  idempotencyKey: text('idempotency_key').primaryKey(),
  userId: integer('user_id').notNull(),
  amount: doublePrecision('amount').notNull(),
});

beforeAll(async () => {
  database = await useTestPostgres();
  pool = new pg.Pool({ connectionString: database.url });
  await pool.query(
    `CREATE TABLE "${grantsTable}" (idempotency_key text PRIMARY KEY, user_id int NOT NULL, amount float8 NOT NULL)`,
  );
}, 60_000);

afterAll(async () => {
  if (pool) {
    await dropTables(pool, [deliveries, grantsTable]);
    await pool.end();
  }
  await database?.close();
});

describe('docs/postgres.md: Drizzle on ctx.transaction', () => {
  it('commits the ORM write with the delivery, and rolls it back when a handler fails', async () => {
    let crmDown = true;
    const receiver = createReceiver({
      secret: SECRET,
      store: postgresStore({ pool, table: deliveries }),
    });
    receiver.on('PaymentCompleted', async (event, ctx) => {
      const db = drizzle(ctx.transaction!);
      const { user, totalAmount } = event.data.payment.invoice;
      await db.insert(grants).values({
        idempotencyKey: event.idempotencyKey,
        userId: Number(user.id),
        amount: totalAmount,
      });
    });
    receiver.on('PaymentCompleted', async () => {
      if (crmDown) throw new Error('crm is down');
    });
    const delivery = fixtureDelivery('PaymentCompleted');
    const request = { method: 'POST', headers: delivery.headers, body: delivery.body };

    expect((await receiver.handle(request)).outcome).toBe('handler_failed');
    expect(await drizzle(pool).select().from(grants)).toEqual([]);

    crmDown = false;
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    const rows = await drizzle(pool).select().from(grants);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.idempotencyKey).toBe(delivery.idempotencyKey);
  });
});
