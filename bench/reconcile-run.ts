/**
 * A reconcile run over 10 000 paid invoices served by `createMockSchoolApi` over loopback HTTP,
 * on a memoryStore: pages per second, items per second, and the heap the run kept, for three
 * runs: a dry run (every invoice missing), a run that recovers all of them, and a second run
 * that finds every one handled. Pages are of 1 000 items (the platform's most, the default).
 *
 * Run: `node --expose-gc --import tsx bench/reconcile-run.ts`
 * @module
 */

import process from 'node:process';
import { createSchoolApi } from '../src/api/index.js';
import { createReconciler, type ReconcileRunOptions } from '../src/reconcile/index.js';
import { memoryStore } from '../src/stores/memory.js';
import { createMockSchoolApi } from '../src/testing/mock-school-api.js';

const INVOICES = 10_000;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const API_KEY = 'sk_bench_reconcile';

function gc(): void {
  (globalThis as { gc?: () => void }).gc?.();
}

const issued = new Date(NOW - 24 * 3_600_000).toISOString();
const mock = await createMockSchoolApi({
  apiKey: API_KEY,
  lists: {
    invoices: Array.from({ length: INVOICES }, (_, n) => ({
      invoiceId: 100_000 + n,
      status: 'Active',
      totalAmount: 4900,
      currency: 'Rub',
      createdAt: issued,
      user: { id: 500_000 + n, email: `student${n}@example.com` },
      products: [{ productId: 31, courseId: 310, totalPrice: 4900, discountAmount: 0 }],
      paymentStatus: 'Completed',
    })),
  },
});
const api = createSchoolApi({ baseUrl: mock.url, apiKey: API_KEY, sellerId: 1, schoolId: 1 });
const store = memoryStore();
let granted = 0;
const reconciler = createReconciler({ api, store, now: () => NOW }).on('invoice', () => {
  granted++;
});

async function measure(label: string, options: ReconcileRunOptions): Promise<void> {
  const pagesBefore = mock.requests.length;
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  const started = performance.now();
  const report = await reconciler.run(options);
  const seconds = (performance.now() - started) / 1000;
  const pages = mock.requests.length - pagesBefore;
  gc();
  const kept = process.memoryUsage().heapUsed - heapBefore;
  console.log(
    `${label}: ${report.checked.invoice} invoices in ${seconds.toFixed(2)} s, ${pages} pages ` +
      `(${(pages / seconds).toFixed(1)} pages/s, ${Math.round(report.checked.invoice / seconds)} items/s); ` +
      `recovered ${report.recovered}, handled ${report.handled}, missing ${report.missing.length}; ` +
      `heap kept ${(kept / 1_048_576).toFixed(1)} MiB`,
  );
}

await measure('dry run', { since: '48h', dryRun: true, kinds: ['invoice'] });
await measure('recovery', { since: '48h' });
await measure('second run', { since: '48h' });
if (granted !== INVOICES) throw new Error(`the handler ran ${granted} times, not ${INVOICES}`);
await mock.close();
