// A node:http receiver on Postgres only: each payment's grant is written in the delivery's own
// transaction, so it is committed exactly once, together with the delivery's key.
// Run: npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
//        SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/postgres.js
import { createServer } from 'node:http';
import pg from 'pg';
import { createReceiver } from 'schoolhooks';
import { nodeListener } from 'schoolhooks/node';
import { postgresStore } from 'schoolhooks/postgres';

const secret = process.env.SCHOOL_WEBHOOK_SECRET;
if (!secret) {
  console.error('SCHOOL_WEBHOOK_SECRET is not set: give it the endpoint secretKey.');
  process.exit(2);
}
const port = Number(process.env.PORT ?? 3000);
const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
// postgresStore listens to the pool's errors (an idle connection a PostgreSQL restart ended)
// and tells each to onError: a pool only the store uses needs no listener of its own.
await pool.query(
  'create table if not exists grants (idempotency_key text primary key, user_id bigint, amount numeric)',
);

const receiver = createReceiver({ secret, store: postgresStore({ pool }) });
receiver.on('PaymentCompleted', async (event, ctx) => {
  const { user, totalAmount } = event.data.payment.invoice;
  await ctx.transaction.query('insert into grants values ($1, $2, $3)', [
    event.idempotencyKey,
    user.id,
    totalAmount,
  ]);
});
receiver.onError((error) => console.warn(`webhook ${error.code}: ${error.message}`));

createServer(nodeListener(receiver, { path: '/webhooks/school' })).listen(port, () =>
  console.log(`listening on http://localhost:${port}/webhooks/school`),
);
