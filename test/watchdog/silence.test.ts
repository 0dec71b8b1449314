/**
 * `silent`: the school's lists (read over real HTTP from the mock API) hold a paid invoice older
 * than `silentAfterMs` that no delivery recorded; the endpoint may be disabled or point elsewhere.
 * Not silent when each such invoice came as a delivery, nor when the only unrecorded one is younger
 * than `silentAfterMs` (its webhook may still be on its way).
 */

import { afterEach, describe, expect, it } from 'vitest';
import { createSchoolApi } from '../../src/api/index.js';
import { createReceiver } from '../../src/index.js';
import { createDelivery, fixtures } from '../../src/testing/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { createWatchdog } from '../../src/watchdog/index.js';

const SECRET = 'whsec_silence_test_0123456789abcdef01234';
const CREDENTIALS = { apiKey: 'sk_test_silence_0123456789abcdef', sellerId: 7, schoolId: 8 };
const MINUTE = 60_000;
const NOW = Date.parse('2026-11-20T12:00:00.000Z');
const iso = (time: number) => new Date(time).toISOString();

const mocks: MockSchoolApi[] = [];
afterEach(async () => {
  await Promise.all(mocks.splice(0).map((mock) => mock.close()));
});

/** A paid invoice as the list gives it, created `ageMs` before now. */
const paid = (invoiceId: number, ageMs: number) => ({
  invoiceId,
  createdAt: iso(NOW - ageMs),
  user: { id: invoiceId + 1 },
  paymentStatus: 'Completed',
});

/** A receiver on the memory store that was sent PaymentCompleted for `delivered`, and a watchdog on it and the mock's API. */
async function watching(invoices: ReturnType<typeof paid>[], delivered: number[]) {
  const mock = await createMockSchoolApi({ ...CREDENTIALS, lists: { invoices } });
  mocks.push(mock);
  const receiver = createReceiver({ secret: SECRET, logger: false, now: () => NOW });
  receiver.on('PaymentCompleted', () => {});
  for (const id of delivered) {
    const delivery = createDelivery(
      'PaymentCompleted',
      fixtures.PaymentCompleted({ payment: { invoice: { id } } }),
      { secret: SECRET, timestamp: new Date(NOW) },
    );
    expect((await receiver.handle({ method: 'POST', ...delivery })).status).toBe(200);
  }
  const api = createSchoolApi({ baseUrl: mock.url, ...CREDENTIALS });
  return createWatchdog({ receiver, api, now: () => NOW });
}

describe('the watchdog reads the lists for silence', () => {
  it('says silent when a paid invoice older than silentAfterMs came as no delivery', async () => {
    const watchdog = await watching(
      [paid(41_001, 90 * MINUTE), paid(41_002, 3 * 60 * MINUTE)],
      [41_001],
    );
    const health = await watchdog.check();
    expect(health.status).toBe('silent');
    expect(health.silent).toEqual({ entities: 1, oldestAt: iso(NOW - 3 * 60 * MINUTE) });
  });

  it('is ok when every paid invoice older than silentAfterMs came as a delivery', async () => {
    const watchdog = await watching(
      [paid(42_001, 90 * MINUTE), paid(42_002, 45 * MINUTE)],
      [42_001, 42_002],
    );
    const health = await watchdog.check();
    expect(health.status).toBe('ok');
    expect(health.silent).toBeUndefined();
  });

  it('is ok when the only paid invoice no delivery recorded is younger than silentAfterMs (30 min)', async () => {
    const watchdog = await watching(
      [paid(43_001, 90 * MINUTE), paid(43_002, 10 * MINUTE)],
      [43_001],
    );
    expect((await watchdog.check()).status).toBe('ok');
  });
});
