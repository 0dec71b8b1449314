// A stack on Postgres alone: postgresStore for exactly-once writes, pgBossInbox for the jobs, and
// workers, all on one database. `node examples/pg-boss.js` is the web process (stores, answers
// 202); `node examples/pg-boss.js worker` is a worker (one or many, anywhere).
// Run: npm run build && DATABASE_URL=postgres://postgres@127.0.0.1:5432/test \
//        SCHOOL_WEBHOOK_SECRET=<endpoint secretKey> node examples/pg-boss.js [worker]
import { createServer } from 'node:http';
import pg from 'pg';
import { createReceiver } from 'schoolhooks';
import { nodeListener } from 'schoolhooks/node';
import { pgBossInbox, postgresStore } from 'schoolhooks/postgres';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL });
// postgresStore listens to the pool's errors (an idle connection a PostgreSQL restart ended)
// and tells each to onError: a pool only the store uses needs no listener of its own.
const inbox = pgBossInbox({ connectionString: process.env.DATABASE_URL });
const receiver = createReceiver({
  secret: process.env.SCHOOL_WEBHOOK_SECRET,
  store: postgresStore({ pool }),
  inbox,
});
receiver.on('PaymentCompleted', async (event, ctx) => {
  const { user, totalAmount } = event.data.payment.invoice;
  // In the run's transaction: committed with the job's run, or not at all.
  await ctx.transaction.query(
    'insert into grants (idempotency_key, user_id, amount) values ($1, $2, $3)',
    [event.idempotencyKey, user.id, totalAmount],
  );
});
await pool.query(
  'create table if not exists grants (idempotency_key text primary key, user_id bigint, amount numeric)',
);
await inbox.start(); // a pg-boss it does not know fails here, not at the first delivery

if (process.argv[2] === 'worker') {
  const worker = inbox.work(receiver, { concurrency: 10 });
  console.log('worker running');
  process.once('SIGTERM', async () => {
    await worker.close(); // finishes the jobs it runs, takes no new one
    await inbox.close();
    await pool.end();
  });
} else {
  const server = createServer(nodeListener(receiver, { path: '/webhooks/school' }));
  server.listen(Number(process.env.PORT ?? 3000), () =>
    console.log(`listening on http://localhost:${server.address().port}/webhooks/school`),
  );
  process.once('SIGTERM', () =>
    server.close(async () => {
      await inbox.close();
      await pool.end();
    }),
  );
}
