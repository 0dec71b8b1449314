/**
 * The delivery steps (src/receiving/pipeline.ts) at their edges, through a real receiver: the exact
 * boundaries of the method, content type, size and age checks, the errors each failure gives
 * `onError` (its message and its cause), and what a store or an inbox that fails is answered.
 */

import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import {
  ConfigError,
  createReceiver,
  InboxUnavailableError,
  MalformedEnvelopeError,
  memoryStore,
  StoreUnavailableError,
  type IdempotencyStore,
  type Inbox,
  type ReceiverOptions,
  type SchoolhooksError,
  type StoredDelivery,
  type Telemetry,
} from '../src/index.js';
import type { HandlersRecord } from '../src/telemetry/telemetry.js';
import { deferred, SECRET, signedRaw, signedRequest } from './helpers/signed.js';
import { fixtureData } from '../src/testing/fixtures.js';

/** The PaymentCompleted fixture's data, which the bundled schema accepts. */
function paymentCompleted(): Record<string, unknown> {
  return fixtureData('PaymentCompleted') as unknown as Record<string, unknown>;
}

function setup(options: Partial<ReceiverOptions> = {}) {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({ secret: SECRET, logger: false, ...options });
  receiver.onError((error) => {
    errors.push(error);
  });
  return { receiver, errors };
}

/** A request with its content type replaced (every spelling of the header removed first). */
function withContentType(contentType: string | undefined) {
  const request = signedRequest();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    if (name.toLowerCase() !== 'content-type') headers[name] = value;
  }
  if (contentType !== undefined) headers['content-type'] = contentType;
  return { ...request, headers };
}

describe('step 1, request', () => {
  it('takes POST in any letter case, and names any other method, cut to 16 characters', async () => {
    const { receiver, errors } = setup();
    expect((await receiver.handle({ ...signedRequest(), method: 'post' })).outcome).toBe('ignored');
    expect((await receiver.handle({ ...signedRequest(), method: 'PUT' })).status).toBe(405);
    expect(errors.map((error) => error.message)).toEqual(['method PUT is not allowed; use POST']);
    await receiver.handle({ ...signedRequest(), method: 'X'.repeat(40) });
    expect(errors[1]?.message).toBe(`method ${'X'.repeat(16)} is not allowed; use POST`);
  });

  it('takes application/json in any case, with parameters and spaces, or no content type at all', async () => {
    const { receiver } = setup();
    for (const type of [
      undefined,
      'application/json',
      'Application/JSON',
      'application/json;charset=utf-8',
      'APPLICATION/JSON ; charset=utf-8',
      ' application/json ',
    ]) {
      expect((await receiver.handle(withContentType(type))).outcome, String(type)).toBe('ignored');
    }
  });

  it('answers 415 to any other type, an empty one included, saying what it takes', async () => {
    const { receiver, errors } = setup();
    for (const type of ['', 'text/plain', 'application/jsonp', 'application/json-patch+json']) {
      expect((await receiver.handle(withContentType(type))).status, type).toBe(415);
    }
    expect(errors[0]?.message).toBe('content-type must be application/json');
  });
});

describe('step 2, body', () => {
  it('refuses a body announced larger than maxBodyBytes before reading any of it', async () => {
    const { receiver, errors } = setup({ maxBodyBytes: 100 });
    const read = vi.fn(async () => new Uint8Array(0));
    const headers = { ...signedRaw('{}').headers, 'content-length': '101' };
    const result = await receiver.handle({ method: 'POST', headers, body: read });
    expect(result.status).toBe(413);
    expect(read).not.toHaveBeenCalled();
    expect(errors[0]?.message).toBe('body exceeds maxBodyBytes (100)');
  });

  it('reads a body announced at exactly maxBodyBytes, or not announced, with the limit', async () => {
    const { receiver } = setup({ maxBodyBytes: 100 });
    for (const length of ['100', undefined]) {
      const request = signedRequest();
      const read = vi.fn(async () => new TextEncoder().encode(request.body));
      const headers: Record<string, string> = { ...request.headers };
      if (length !== undefined) headers['content-length'] = length;
      await receiver.handle({ method: 'POST', headers, body: read });
      expect(read, String(length)).toHaveBeenCalledWith(100);
    }
  });

  // A reader that throws instead of rejecting is a stream that could not be read all the same,
  // not a 503 from the receiver's catch-all.
  it.each([
    ['rejects', (error: Error) => () => Promise.reject(error)],
    [
      'throws',
      (error: Error) => () => {
        throw error;
      },
    ],
  ])('answers 400 malformed when the reader %s, keeping why as the cause', async (_, reader) => {
    const { receiver, errors } = setup();
    const broken = new Error('socket hang up');
    const result = await receiver.handle({
      method: 'POST',
      headers: signedRaw('{}').headers,
      body: reader(broken),
    });
    expect(result).toMatchObject({ status: 400, outcome: 'malformed' });
    expect(errors[0]?.message).toBe('the request body could not be read');
    expect(errors[0]?.cause).toBe(broken);
  });

  it('names the fix when a body parser took the bytes', async () => {
    const { receiver, errors } = setup();
    await receiver.handle({ ...signedRequest(), body: { parsed: true } as never });
    // No adapter named its framework: the advice that holds on any, and no framework's own.
    expect(errors[0]?.message).toBe(
      'the raw request body is not available (a body parser consumed it): give the receiver the ' +
        'bytes as received (or a reader of the request stream) before any body parser reads ' +
        "them; each adapter of schoolhooks names its own framework's fix",
    );
  });

  it("names the caller's own fix when it gives one", async () => {
    const { receiver, errors } = setup();
    const rawBodyFix = 'turn off the parser of the webhook route';
    await receiver.handle({ ...signedRequest(), body: { parsed: true } as never, rawBodyFix });
    expect(errors[0]).toBeInstanceOf(ConfigError);
    expect(errors[0]?.message).toBe(
      `the raw request body is not available (a body parser consumed it): ${rawBodyFix}`,
    );
  });

  it('keeps the reason of a reader that says what is wrong with the bytes', async () => {
    const { receiver, errors } = setup();
    const reason = new MalformedEnvelopeError('the body is flagged gzip but is not gzip');
    const result = await receiver.handle({
      headers: signedRaw('{}').headers,
      body: () => Promise.reject(reason),
    });
    expect(result).toMatchObject({ status: 400, outcome: 'malformed' });
    expect(errors).toEqual([reason]);
  });

  it('takes an ArrayBuffer body', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const bytes = new TextEncoder().encode(request.body);
    const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    expect((await receiver.handle({ ...request, body: buffer })).outcome).toBe('ignored');
  });

  it('takes a byte body of exactly maxBodyBytes, and refuses one byte more', async () => {
    const { receiver } = setup({ maxBodyBytes: 100 });
    expect((await receiver.handle(signedRaw(new Uint8Array(100)))).status).not.toBe(413);
    expect((await receiver.handle(signedRaw(new Uint8Array(101)))).status).toBe(413);
  });

  it('counts the UTF-8 bytes of a string body exactly at the limit, for every width of character', async () => {
    const { receiver } = setup({ maxBodyBytes: 100 });
    const cases: [string, string, boolean][] = [
      ['1-byte', 'x'.repeat(100), false],
      ['2-byte U+0080', '\u0080'.repeat(50), false],
      ['2-byte U+0080, one more', '\u0080'.repeat(51), true],
      ['2-byte U+07FF', '\u07ff'.repeat(50), false],
      ['3-byte U+0800', 'x'.repeat(1) + '\u0800'.repeat(33), false],
      ['3-byte U+0800, one more', '\u0800'.repeat(34), true],
      ['4-byte U+10000', '\ud800\udc00'.repeat(25), false],
      ['4-byte U+10000, one more', '\ud800\udc00'.repeat(26), true],
      ['4-byte U+10FFFF', '\udbff\udfff'.repeat(25), false],
      ['4-byte U+1F600', '😀'.repeat(25), false],
      ['a lone high surrogate at the end, 3 bytes', 'x'.repeat(97) + '\ud83d', false],
      ['a lone low surrogate, 3 bytes', 'x'.repeat(97) + '\ude00', false],
      ['a lone low surrogate, one more', 'x'.repeat(98) + '\ude00', true],
      ['a lone low surrogate before a 2-byte character', 'x'.repeat(96) + '\ude00\u0080', true],
    ];
    for (const [label, body, tooLarge] of cases) {
      expect(new TextEncoder().encode(body).byteLength > 100, label).toBe(tooLarge);
      const { status } = await receiver.handle(signedRaw(body));
      expect(status === 413, label).toBe(tooLarge);
    }
  });
});

describe('step 5, age', () => {
  const NOW = Date.parse('2026-06-01T12:00:00.000Z');
  const at = (ms: number) => signedRequest({ timestamp: new Date(ms).toISOString() });

  it('takes an event exactly maxEventAgeMs old, or exactly 5 minutes ahead, and nothing beyond', async () => {
    const { receiver, errors } = setup({ now: () => NOW, maxEventAgeMs: 60_000 });
    expect((await receiver.handle(at(NOW - 60_000))).outcome).toBe('ignored');
    expect((await receiver.handle(at(NOW + 300_000))).outcome).toBe('ignored');
    expect((await receiver.handle(at(NOW - 60_001))).outcome).toBe('stale');
    expect((await receiver.handle(at(NOW + 300_001))).outcome).toBe('stale');
    expect(errors[0]?.message).toBe(
      `UserSignedIn timestamp ${new Date(NOW - 60_001).toISOString()} is outside the accepted window`,
    );
  });
});

describe('step 6, validate', () => {
  // Data the bundled schema refuses, and the fixture (a PaymentCompleted as the platform documents
  // it), which it accepts: the receiver's own schema decides both.
  it.each([
    ['the bundled schema refuses', () => ({ amount: 1 })],
    ['the bundled schema accepts', paymentCompleted],
  ])('gives handlers the data as the schema returned it, for data %s', async (_, data) => {
    const schema = z.record(z.string(), z.unknown()).transform(() => ({ replaced: true }));
    const { receiver } = setup({ schemas: { PaymentCompleted: schema } });
    const seen: unknown[] = [];
    receiver.on('PaymentCompleted', (event) => {
      seen.push(event.data);
    });
    const request = signedRequest({ event: 'PaymentCompleted', data: data() });
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect(seen).toEqual([{ replaced: true }]);
  });

  it("refuses with the receiver's own schema a payload the bundled schema accepts", async () => {
    const strict = z.looseObject({ payment: z.looseObject({ id: z.string() }) });
    const { receiver } = setup({ schemas: { PaymentCompleted: strict } });
    const request = signedRequest({ event: 'PaymentCompleted', data: paymentCompleted() });
    expect((await receiver.handle(request)).outcome).toBe('invalid_payload');
  });
});

describe('step 7, claim', () => {
  it('answers duplicate to a key a store remembers without a fingerprint', async () => {
    const store: IdempotencyStore = {
      claim: () => Promise.resolve({ state: 'done' }),
      settle: () => Promise.resolve(),
      peek: () => Promise.resolve([]),
    };
    const { receiver } = setup({ store });
    expect((await receiver.handle(signedRequest())).outcome).toBe('duplicate');
  });

  it('answers 503 when the claim fails, keeping why as the cause', async () => {
    const down = new Error('ECONNREFUSED');
    const store: IdempotencyStore = {
      claim: () => Promise.reject(down),
      settle: () => Promise.resolve(),
      peek: () => Promise.resolve([]),
    };
    const { receiver, errors } = setup({ store });
    expect((await receiver.handle(signedRequest())).status).toBe(503);
    expect(errors[0]?.message).toBe('the idempotency store failed to claim the key: ECONNREFUSED');
    expect(errors[0]?.cause).toBe(down);
  });
});

describe('step 8, dispatch', () => {
  /** A memory store whose settle `which` fails with `error`. */
  function failing(which: 'complete' | 'release', error: Error): IdempotencyStore {
    const store = memoryStore();
    return {
      ...store,
      settle: (claim, how) => (how === which ? Promise.reject(error) : store.settle(claim, how)),
    };
  }

  it('still acknowledges handlers that succeeded when the completion fails, and reports why', async () => {
    const down = new Error('completion lost');
    const { receiver, errors } = setup({ store: failing('complete', down) });
    receiver.on('UserSignedIn', () => undefined);
    expect((await receiver.handle(signedRequest())).outcome).toBe('processed');
    expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
    expect(errors[0]?.message).toBe(
      'the idempotency store failed to record completion: completion lost',
    );
    expect(errors[0]?.cause).toBe(down);
  });

  it('still answers 500 handler_failed when the release fails, and reports why', async () => {
    const down = new Error('release lost');
    const { receiver, errors } = setup({ store: failing('release', down) });
    receiver.on('UserSignedIn', () => {
      throw new Error('handler broke');
    });
    expect((await receiver.handle(signedRequest())).outcome).toBe('handler_failed');
    const released = errors.find((error) => error instanceof StoreUnavailableError);
    expect(released?.message).toBe('the idempotency store failed to release the key: release lost');
    expect(released?.cause).toBe(down);
  });

  it("answers 503 store_unavailable when the completion that commits the handlers' transaction fails", async () => {
    const down = new Error('commit failed');
    const abandon = vi.fn();
    const store: IdempotencyStore = {
      claim: (request) =>
        Promise.resolve({
          state: 'claimed',
          request,
          token: 't',
          records: [],
          superseded: false,
          transaction: { client: {} as never, abandon },
        }),
      settle: (_claim, how) => (how === 'complete' ? Promise.reject(down) : Promise.resolve()),
      peek: () => Promise.resolve([]),
    };
    const { receiver, errors } = setup({ store });
    receiver.on('UserSignedIn', () => undefined);
    const result = await receiver.handle(signedRequest({ idempotencyKey: 'commit-1' }));
    expect(result).toMatchObject({ status: 503, outcome: 'store_unavailable' });
    expect(result.body).toMatchObject({ idempotencyKey: 'commit-1' });
    expect(errors[0]?.message).toBe(
      "the idempotency store failed to commit the handlers' transaction: commit failed",
    );
    expect(errors[0]?.cause).toBe(down);
    expect(abandon).not.toHaveBeenCalled();
  });

  it('completes the key when timed-out handlers succeed at last: the next resend is a duplicate, run once', async () => {
    const { receiver, errors } = setup({ handlerTimeoutMs: 20 });
    const gate = deferred();
    let runs = 0;
    receiver.on('UserSignedIn', async () => {
      runs++;
      await gate.promise;
    });
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('timeout');
    gate.resolve();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    expect(runs).toBe(1);
    expect(errors.map((error) => error.code)).toEqual(['timeout']);
  });

  it('tells telemetry how long the handlers ran, now and after a timeout', async () => {
    const records: HandlersRecord[] = [];
    const telemetry: Telemetry = {
      start: () => ({
        runHandlers: (run) => run(),
        handlersEnded: (record) => records.push(record),
        carrier: () => undefined,
        end() {},
      }),
    };
    const { receiver } = setup({ telemetry, handlerTimeoutMs: 20 });
    receiver.on('UserSignedIn', () => new Promise((resolve) => setTimeout(resolve, 40)));
    const before = performance.now();
    await receiver.handle(signedRequest());
    await vi.waitFor(() => expect(records).toHaveLength(1));
    const elapsed = performance.now() - before;
    expect(records[0]!.timedOut).toBe(true);
    expect(records[0]!.durationMs).toBeGreaterThanOrEqual(35);
    expect(records[0]!.durationMs).toBeLessThanOrEqual(elapsed);

    const quick = setup({ telemetry });
    quick.receiver.on('UserSignedIn', () => new Promise((resolve) => setTimeout(resolve, 10)));
    const start = performance.now();
    await quick.receiver.handle(signedRequest());
    const took = performance.now() - start;
    expect(records[1]!.timedOut).toBe(false);
    expect(records[1]!.durationMs).toBeGreaterThanOrEqual(5);
    expect(records[1]!.durationMs).toBeLessThanOrEqual(took);
  });
});

describe('step 8 with an inbox, hand off', () => {
  /** An inbox that keeps what it is given, or fails with `error`. */
  function keeping(error?: Error): Inbox & { stored: StoredDelivery[] } {
    const stored: StoredDelivery[] = [];
    return {
      stored,
      enqueue: (delivery) => {
        if (error) return Promise.reject(error);
        stored.push(delivery);
        return Promise.resolve();
      },
    };
  }

  it('stores no trace field at all without telemetry', async () => {
    const inbox = keeping();
    const { receiver } = setup({ inbox });
    expect((await receiver.handle(signedRequest())).outcome).toBe('queued');
    expect(Object.keys(inbox.stored[0]!).sort()).toEqual([
      'body',
      'event',
      'idempotencyKey',
      'receivedAt',
      'signature',
    ]);
  });

  it('answers 503 inbox_unavailable when the inbox fails, keeping why as the cause', async () => {
    const down = new Error('queue full');
    const { receiver, errors } = setup({ inbox: keeping(down) });
    expect((await receiver.handle(signedRequest())).outcome).toBe('inbox_unavailable');
    expect(errors[0]).toBeInstanceOf(InboxUnavailableError);
    expect(errors[0]?.message).toBe('the inbox failed to store the delivery: queue full');
    expect(errors[0]?.cause).toBe(down);
  });
});

describe('a worker’s run of a stored delivery', () => {
  it('holds a run key of its own, ~["run",<key>], apart from the delivery’s and from other runs', async () => {
    const store = memoryStore();
    const { receiver } = setup({ store });
    const ran: string[] = [];
    receiver.on('UserSignedIn', (event) => {
      ran.push(event.idempotencyKey);
    });
    for (const key of ['run-a', 'run-b']) {
      const request = signedRequest({ idempotencyKey: key });
      const stored: StoredDelivery = {
        body: request.body,
        signature: request.headers['signature']!,
        event: 'UserSignedIn',
        idempotencyKey: key,
        receivedAt: new Date().toISOString(),
      };
      expect((await receiver.processStored(stored, { attempt: 1 })).outcome).toBe('processed');
    }
    expect(ran).toEqual(['run-a', 'run-b']);
    expect(await store.peek(['~["run","run-a"]', 'run-a'])).toEqual([
      { state: 'done', fingerprint: expect.any(String) },
      { state: 'free' },
    ]);
  });
});
