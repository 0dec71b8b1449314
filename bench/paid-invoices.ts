/**
 * The paid invoices the reconcile benches list: `count` of them, issued evenly over a day, 30 to
 * 6 hours before `now` (inside every run's window), each of its own student; and their pages as
 * a hand-written loop reads them.
 * @module
 */

import type { MockInvoice } from '../src/testing/index.js';

const HOUR = 3_600_000;

/** `count` paid invoices, oldest first, evenly apart from 30 h to 6 h before `now`. */
export function paidInvoicesOverADay(count: number, now: number): MockInvoice[] {
  return Array.from({ length: count }, (_, n) => ({
    invoiceId: 100_000 + n,
    status: 'Active',
    totalAmount: 4900,
    currency: 'Rub',
    createdAt: new Date(now - 30 * HOUR + Math.floor((n * 24 * HOUR) / count)).toISOString(),
    user: { id: 500_000 + n, email: `student${n}@example.com` },
    products: [{ productId: 31, courseId: 310, totalPrice: 4900, discountAmount: 0 }],
    paymentStatus: 'Completed',
  }));
}

/**
 * Every page of the paid invoices a mock API lists in the window a run reads (9 days to 5 hours
 * before `now`), by `skip`, as a hand-written loop reads them.
 */
export async function* paidInvoicePages(
  mockUrl: string,
  apiKey: string,
  now: number,
): AsyncGenerator<{ invoiceId: number }[]> {
  const from = new Date(now - 9 * 24 * HOUR).toISOString();
  const to = new Date(now - 5 * HOUR).toISOString();
  for (let skip = 0; ; skip += 1000) {
    const query = new URLSearchParams({
      take: '1000',
      skip: String(skip),
      'createdAtDateRange[from]': from,
      'createdAtDateRange[to]': to,
      'payment[actualStatuses]': 'Completed',
    });
    const answer = await fetch(`${mockUrl}/saas/v2/invoice/list/raw?${query}`, {
      headers: { authorization: `Bearer ${apiKey}`, 'seller-id': '1', 'school-id': '1' },
    });
    const { payload } = (await answer.json()) as {
      payload: { items: { invoiceId: number }[]; isLast: boolean };
    };
    yield payload.items;
    if (payload.isLast) return;
  }
}
