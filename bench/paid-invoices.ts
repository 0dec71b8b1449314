/**
 * The paid invoices the reconcile benches list: `count` of them, issued evenly over a day, 30 to
 * 6 hours before `now` (inside every run's window), each of its own student.
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
