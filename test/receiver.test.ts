import { inspect } from 'node:util';
import { setImmediate as setImmediatePromise } from 'node:timers/promises';
import { describe, expect, it, vi } from 'vitest';
import {
  ConfigError,
  createReceiver,
  HandlerError,
  HandlerTimeoutError,
  IdempotencyConflictError,
  isSchoolhooksError,
  memoryInbox,
  memoryStore,
  PayloadValidationError,
  SignatureError,
  StoreUnavailableError,
  type IdempotencyStore,
  type ReceiverOptions,
  type HandlersRecord,
  type SchoolhooksError,
  type Telemetry,
} from '../src/index.js';
import { deferred, hmacHex, SECRET, signedRaw, signedRequest } from './helpers/signed.js';

function setup(options: Partial<ReceiverOptions> = {}) {
  const errors: SchoolhooksError[] = [];
  const receiver = createReceiver({ secret: SECRET, ...options });
  receiver.onError((error) => {
    errors.push(error);
  });
  return { receiver, errors };
}

describe('createReceiver options', () => {
  const HOUR = 60 * 60 * 1000;
  const shortDedup = /^dedupTtlMs must be >= maxEventAgeMs, or a late retry is processed twice$/;

  it('refuses a dedupTtlMs one ms shorter than maxEventAgeMs, saying a late retry would run twice', () => {
    expect(() => createReceiver({ secret: SECRET, dedupTtlMs: 1999, maxEventAgeMs: 2000 })).toThrow(
      ConfigError,
    );
    expect(() => createReceiver({ secret: SECRET, dedupTtlMs: 1999, maxEventAgeMs: 2000 })).toThrow(
      shortDedup,
    );
  });

  it('accepts a dedupTtlMs equal to maxEventAgeMs', () => {
    expect(() =>
      createReceiver({ secret: SECRET, dedupTtlMs: 2000, maxEventAgeMs: 2000 }),
    ).not.toThrow();
  });

  it('refuses a 2 h dedup window for 72 h old events, however far it outlasts the lease', () => {
    const options = { secret: SECRET, dedupTtlMs: 2 * HOUR, maxEventAgeMs: 72 * HOUR, leaseMs: 1 };
    expect(() => createReceiver(options)).toThrow(shortDedup);
  });

  it('accepts a dedup window that covers the event age even when it is shorter than the lease', () => {
    const options = { secret: SECRET, dedupTtlMs: 2000, maxEventAgeMs: 1000, leaseMs: 5000 };
    expect(() => createReceiver(options)).not.toThrow();
  });

  it('throws a ConfigError for an empty secret or list, without echoing it', () => {
    expect(() => createReceiver({ secret: '' })).toThrow(ConfigError);
    expect(() => createReceiver({ secret: [] })).toThrow(ConfigError);
    expect(() => createReceiver({ secret: SECRET, leaseMs: -1 })).toThrow(/leaseMs/);
  });

  it('refuses a list with an empty secret without echoing the real secret next to it', () => {
    const live = 'whsec_live_4f9c2a7e1b3d5f60';
    const attempt = () => createReceiver({ secret: [live, ''] });
    expect(attempt).toThrow(ConfigError);
    let message = '';
    try {
      attempt();
    } catch (error) {
      // Everything a logger could print: the message, the stack, the cause and own properties.
      message = inspect(error, { depth: 5, showHidden: true });
    }
    expect(message).toMatch(/secret/);
    for (const part of [live, 'whsec_live', '4f9c2a7e', '1b3d5f60']) {
      expect(message).not.toContain(part);
    }
  });

  it('exposes maxBodyBytes for adapters, 1 MiB by default', () => {
    expect(createReceiver({ secret: SECRET }).maxBodyBytes).toBe(1024 * 1024);
    expect(createReceiver({ secret: SECRET, maxBodyBytes: 10 }).maxBodyBytes).toBe(10);
  });
});

describe('receiver.handle: the status table', () => {
  it('answers 405 method_not_allowed to a method other than POST', async () => {
    const { receiver, errors } = setup();
    const result = await receiver.handle({ ...signedRequest(), method: 'GET' });
    expect(result).toEqual({
      status: 405,
      outcome: 'method_not_allowed',
      body: { ok: false, outcome: 'method_not_allowed' },
    });
    expect(errors[0]?.code).toBe('request_rejected');
  });

  it('accepts a request without a method (the caller already routed it)', async () => {
    const { receiver } = setup();
    const { method: _method, ...request } = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('ignored');
  });

  it('answers 415 to a content type other than application/json, and allows a charset', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const text = { ...request, headers: { ...request.headers, 'content-type': 'text/plain' } };
    expect((await receiver.handle(text)).status).toBe(415);
    const charset = {
      ...request,
      headers: { ...request.headers, 'content-type': 'Application/JSON; charset=utf-8' },
    };
    expect((await receiver.handle(charset)).outcome).toBe('ignored');
  });

  it('answers 500 body_unavailable when a body parser consumed the raw bytes, naming the fix', async () => {
    const { receiver, errors } = setup();
    const request = signedRequest();
    const result = await receiver.handle({
      ...request,
      body: JSON.parse(request.body) as never,
    });
    expect(result.status).toBe(500);
    expect(result.outcome).toBe('body_unavailable');
    expect(errors[0]).toBeInstanceOf(ConfigError);
    expect(errors[0]?.message).toMatch(/body parser/);
  });

  it('answers 413 too_large to a body over maxBodyBytes, counting UTF-8 bytes of a string', async () => {
    const { receiver } = setup({ maxBodyBytes: 100 });
    const body = JSON.stringify({ pad: 'я'.repeat(50) }); // 60 characters, 110 UTF-8 bytes
    expect(body.length).toBeLessThan(100);
    expect((await receiver.handle(signedRaw(body))).status).toBe(413);
    expect((await receiver.handle(signedRaw('x'.repeat(100)))).status).not.toBe(413);
  });

  it('answers 401 invalid_signature to a missing, malformed or wrong signature', async () => {
    const { receiver, errors } = setup();
    const request = signedRequest();
    const cases: Record<string, string>[] = [
      { 'content-type': 'application/json' },
      { ...request.headers, signature: 'abc' },
      { ...request.headers, signature: `sha256=${request.headers.signature}` },
      { ...request.headers, signature: hmacHex(request.body, 'another secret') },
      { ...request.headers, signature: 'z'.repeat(64) },
    ];
    for (const headers of cases) {
      const result = await receiver.handle({ ...request, headers });
      expect(result).toEqual({
        status: 401,
        outcome: 'invalid_signature',
        body: { ok: false, outcome: 'invalid_signature' },
      });
    }
    expect(errors.every((e) => e instanceof SignatureError)).toBe(true);
  });

  it('answers 401 to a signature whose last hex digit, or one in its second half, is changed', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const good = hmacHex(request.body);
    for (const index of [63, 40]) {
      const digit = (parseInt(good[index]!, 16) ^ 1).toString(16);
      const signature = good.slice(0, index) + digit + good.slice(index + 1);
      const result = await receiver.handle({
        ...request,
        headers: { ...request.headers, signature },
      });
      expect(result.status).toBe(401);
    }
    expect((await receiver.handle(request)).outcome).toBe('ignored');
  });

  it('answers 401 to a body with a byte near its end changed under a valid signature', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const index = request.body.length - 3;
    const changed = request.body[index] === 'x' ? 'y' : 'x';
    const body = request.body.slice(0, index) + changed + request.body.slice(index + 1);
    expect((await receiver.handle({ ...request, body })).status).toBe(401);
  });

  it('verifies with any of several secrets', async () => {
    const { receiver } = setup({ secret: ['old secret', SECRET] });
    expect((await receiver.handle(signedRequest({}, 'old secret'))).outcome).toBe('ignored');
    expect((await receiver.handle(signedRequest({}, SECRET))).outcome).toBe('ignored');
    expect((await receiver.handle(signedRequest({}, 'third'))).status).toBe(401);
  });

  it('answers 400 malformed to a body that is not JSON or not an envelope', async () => {
    const { receiver } = setup();
    const bodies = [
      'not json',
      '{"event":"UserSignedIn"',
      '[]',
      'null',
      JSON.stringify({ event: 'UserSignedIn', timestamp: new Date().toISOString(), data: {} }),
      JSON.stringify({
        event: '',
        timestamp: new Date().toISOString(),
        idempotencyKey: 'k',
        data: {},
      }),
      JSON.stringify({
        event: 'UserSignedIn',
        timestamp: 'yesterday',
        idempotencyKey: 'k',
        data: {},
      }),
      JSON.stringify({
        event: 'UserSignedIn',
        timestamp: new Date().toISOString(),
        idempotencyKey: 'k',
        data: 'x',
      }),
      JSON.stringify({
        event: 'UserSignedIn',
        timestamp: new Date().toISOString(),
        idempotencyKey: 7,
        data: {},
      }),
    ];
    for (const body of bodies) {
      const result = await receiver.handle(signedRaw(body));
      expect(result.status, body).toBe(400);
      expect(result.outcome).toBe('malformed');
    }
  });

  it('answers 422 stale to an old event and to one more than 5 minutes ahead', async () => {
    const now = Date.parse('2026-11-22T12:00:00Z');
    const { receiver } = setup({ now: () => now, maxEventAgeMs: 60 * 60_000 });
    const at = (offsetMs: number) =>
      receiver.handle(signedRequest({ timestamp: new Date(now + offsetMs).toISOString() }));
    expect((await at(-60 * 60_000 - 1)).outcome).toBe('stale');
    expect((await at(-60 * 60_000 + 1000)).outcome).toBe('ignored');
    expect((await at(5 * 60_000 + 1000)).outcome).toBe('stale');
    expect((await at(4 * 60_000)).outcome).toBe('ignored');
    expect((await at(-2 * 60 * 60_000)).status).toBe(422);
  });

  it('answers 422 invalid_payload to a fixed-contract event whose data fails its schema', async () => {
    const { receiver, errors } = setup();
    const result = await receiver.handle(
      signedRequest({ event: 'PaymentCompleted', data: { payment: { id: 'not a number' } } }),
    );
    expect(result.status).toBe(422);
    expect(result.outcome).toBe('invalid_payload');
    const error = errors[0];
    expect(error).toBeInstanceOf(PayloadValidationError);
    // Each issue says where and what: the field the payload got wrong is among them.
    expect((error as PayloadValidationError).issues).toContainEqual({
      path: ['payment', 'id'],
      code: 'invalid_type',
      message: expect.any(String) as string,
    });
  });

  it('answers 200 processed and runs the handler with the event', async () => {
    const { receiver } = setup();
    const seen: unknown[] = [];
    receiver.on('UserSignedIn', (event, context) => {
      seen.push([event.event, event.idempotencyKey, context.idempotencyKey]);
    });
    const request = signedRequest();
    const result = await receiver.handle(request);
    expect(result).toEqual({
      status: 200,
      outcome: 'processed',
      body: { ok: true, outcome: 'processed', idempotencyKey: request.idempotencyKey },
    });
    expect(seen).toEqual([['UserSignedIn', request.idempotencyKey, request.idempotencyKey]]);
  });

  it('answers 200 duplicate to a retry of a completed event, without running handlers again', async () => {
    const { receiver } = setup();
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect(await receiver.handle(request)).toEqual({
      status: 200,
      outcome: 'duplicate',
      body: { ok: true, outcome: 'duplicate', idempotencyKey: request.idempotencyKey },
    });
    expect(handler).toHaveBeenCalledTimes(1);
  });

  it('answers 409 conflict to the same envelope re-serialised with other whitespace and key order, and never runs it', async () => {
    // "The same body" is the same bytes: the platform resends a retry and fans an event out to
    // every endpoint byte for byte, and only a holder of the secret could re-sign another text.
    const { receiver, errors } = setup();
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const timestamp = new Date().toISOString();
    const first = signedRaw(
      JSON.stringify({ event: 'UserSignedIn', timestamp, idempotencyKey: 'k-1', data: { a: 1 } }),
    );
    const second = signedRaw(
      `{ "data": { "a": 1 }, "idempotencyKey": "k-1", "timestamp": "${timestamp}", "event": "UserSignedIn" }`,
    );
    expect((await receiver.handle(first)).outcome).toBe('processed');
    expect((await receiver.handle(second)).outcome).toBe('conflict');
    expect(handler).toHaveBeenCalledTimes(1);
    expect(errors.some((e) => e instanceof IdempotencyConflictError)).toBe(true);
  });

  it('answers duplicate to the same bytes fanned out to two endpoints, each signed with its own secret', async () => {
    const other = 'o'.repeat(64);
    const { receiver, errors } = setup({ secret: [SECRET, other] });
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const body = JSON.stringify({
      event: 'UserSignedIn',
      timestamp: new Date().toISOString(),
      idempotencyKey: 'fan-out',
      data: {},
    });
    // Either endpoint's delivery may come first.
    expect((await receiver.handle(signedRaw(body, other))).outcome).toBe('processed');
    expect((await receiver.handle(signedRaw(body, SECRET))).outcome).toBe('duplicate');
    expect((await receiver.handle(signedRaw(body, other))).outcome).toBe('duplicate');
    expect(handler).toHaveBeenCalledTimes(1);
    expect(errors).toEqual([]);
  });

  it('still answers duplicate after the secrets were reordered (a rotation), sharing one store', async () => {
    const next = 'n'.repeat(64);
    const store = memoryStore();
    const before = setup({ secret: [SECRET], store }).receiver.on('UserSignedIn', () => {});
    const after = setup({ secret: [next, SECRET], store });
    const handler = vi.fn();
    after.receiver.on('UserSignedIn', handler);
    const request = signedRequest({ idempotencyKey: 'rotated' });
    expect((await before.handle(request)).outcome).toBe('processed');
    expect((await after.receiver.handle(request)).outcome).toBe('duplicate');
    const changed = signedRequest({ idempotencyKey: 'rotated', data: { n: 2 } }, next);
    expect((await after.receiver.handle(changed)).outcome).toBe('conflict');
    expect(handler).not.toHaveBeenCalled();
  });

  it('answers 409 conflict to a completed key reused with a different envelope, and never runs it', async () => {
    const { receiver, errors } = setup();
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const first = signedRequest({ idempotencyKey: 'shared-key', data: { n: 1 } });
    const second = signedRequest({ idempotencyKey: 'shared-key', data: { n: 2 } });
    expect((await receiver.handle(first)).outcome).toBe('processed');
    const result = await receiver.handle(second);
    expect(result.status).toBe(409);
    expect(result.outcome).toBe('conflict');
    expect(handler).toHaveBeenCalledTimes(1);
    expect(errors.some((e) => e instanceof IdempotencyConflictError)).toBe(true);
  });

  it('answers 409 in_flight while the same key is being handled', async () => {
    const { receiver } = setup();
    const gate = deferred();
    receiver.on('UserSignedIn', () => gate.promise);
    const request = signedRequest();
    const first = receiver.handle(request);
    await vi.waitFor(async () => {
      expect((await receiver.handle(request)).outcome).toBe('in_flight');
    });
    const second = await receiver.handle(request);
    expect(second.status).toBe(409);
    gate.resolve();
    expect((await first).outcome).toBe('processed');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
  });

  it('answers 503 store_unavailable when the store fails to claim', async () => {
    const store: IdempotencyStore = {
      claim: () => Promise.reject(new Error('ECONNREFUSED redis://:hunter2@10.0.0.1')),
      settle: () => Promise.resolve(),
      peek: () => Promise.resolve([]),
    };
    const { receiver, errors } = setup({ store });
    const handler = vi.fn();
    receiver.on('UserSignedIn', handler);
    const result = await receiver.handle(signedRequest());
    expect(result.status).toBe(503);
    expect(result.outcome).toBe('store_unavailable');
    expect(handler).not.toHaveBeenCalled();
    expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
  });

  it('answers 200 ignored to an event nobody handles, and completes its key', async () => {
    const { receiver } = setup();
    const request = signedRequest({ event: 'UserJoinedByReferral' });
    expect((await receiver.handle(request)).outcome).toBe('ignored');
    receiver.on('UserJoinedByReferral', () => {});
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
  });

  it('answers 500 handler_failed, releases the claim, and runs again on the retry with one effect', async () => {
    const { receiver, errors } = setup();
    const effects: string[] = [];
    let attempts = 0;
    receiver.on('UserSignedIn', (event) => {
      attempts += 1;
      if (attempts === 1) throw new Error('database down');
      effects.push(event.idempotencyKey);
    });
    const request = signedRequest();
    const failed = await receiver.handle(request);
    expect(failed).toEqual({
      status: 500,
      outcome: 'handler_failed',
      body: { ok: false, outcome: 'handler_failed', idempotencyKey: request.idempotencyKey },
    });
    expect(errors[0]).toBeInstanceOf(HandlerError);
    expect((errors[0]?.cause as Error).message).toBe('database down');
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
    expect(effects).toEqual([request.idempotencyKey]);
  });

  it('counts a handler that rejects with undefined as failed', async () => {
    const { receiver } = setup();
    let calls = 0;
    receiver.on('UserSignedIn', () => {
      calls += 1;
      return calls === 1 ? Promise.reject(undefined) : undefined;
    });
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('handler_failed');
    expect((await receiver.handle(request)).outcome).toBe('processed');
  });

  it('fingerprints the envelope as delivered, even if a handler changes event.data', async () => {
    const { receiver } = setup();
    receiver.on('UserSignedIn', (event) => {
      event.data.changedByHandler = true;
    });
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('processed');
    expect((await receiver.handle(request)).outcome).toBe('duplicate');
  });

  it('gathers the failures of several handlers into one AggregateError', async () => {
    const { receiver, errors } = setup();
    receiver.on('UserSignedIn', () => Promise.reject(new Error('one')));
    receiver.onAny(() => {
      throw new Error('two');
    });
    expect((await receiver.handle(signedRequest())).status).toBe(500);
    const cause = errors[0]?.cause;
    expect(cause).toBeInstanceOf(AggregateError);
    expect((cause as AggregateError).errors.map((e: Error) => e.message).sort()).toEqual([
      'one',
      'two',
    ]);
  });

  it('answers 503 timeout when handlers outlive handlerTimeoutMs; their success then completes the key', async () => {
    const { receiver, errors } = setup({ handlerTimeoutMs: 20 });
    const gate = deferred();
    let aborted = false;
    receiver.on('UserSignedIn', async (_event, { signal }) => {
      signal.addEventListener('abort', () => (aborted = true));
      await gate.promise;
    });
    const request = signedRequest();
    const result = await receiver.handle(request);
    expect(result.status).toBe(503);
    expect(result.outcome).toBe('timeout');
    expect(aborted).toBe(true);
    expect(errors[0]).toBeInstanceOf(HandlerTimeoutError);
    expect((await receiver.handle(request)).outcome).toBe('in_flight');
    gate.resolve();
    await vi.waitFor(async () => {
      expect((await receiver.handle(request)).outcome).toBe('duplicate');
    });
  });

  it('times out only the slow deliveries among many running at once', async () => {
    const { receiver } = setup({ handlerTimeoutMs: 300 });
    const gate = deferred();
    receiver.on('UserSignedIn', async (event) => {
      // Every third delivery waits for the gate; the others finish within a few turns.
      if (Number(event.data['n']) % 3 === 0) await gate.promise;
      else
        for (let turn = Number(event.data['n']) % 5; turn > 0; turn--) await setImmediatePromise();
    });
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, n) => receiver.handle(signedRequest({ data: { n } }))),
    );
    const outcomes = results.map((result, n) => [n % 3 === 0, result.outcome] as const);
    expect(outcomes.filter(([slow]) => slow).map(([, outcome]) => outcome)).toEqual(
      Array.from({ length: 20 }, () => 'timeout'),
    );
    expect(outcomes.filter(([slow]) => !slow).map(([, outcome]) => outcome)).toEqual(
      Array.from({ length: 40 }, () => 'processed'),
    );
    gate.resolve();
  });

  it('releases the key when a timed-out handler fails later, so the retry runs it', async () => {
    const { receiver } = setup({ handlerTimeoutMs: 20 });
    const gate = deferred();
    let calls = 0;
    receiver.on('UserSignedIn', async () => {
      calls += 1;
      if (calls === 1) {
        await gate.promise;
        throw new Error('late failure');
      }
    });
    const request = signedRequest();
    expect((await receiver.handle(request)).outcome).toBe('timeout');
    gate.resolve();
    await vi.waitFor(async () => {
      expect((await receiver.handle(request)).outcome).toBe('processed');
    });
    expect(calls).toBe(2);
  });

  it('answers 200 processed when handlers succeeded but completion failed, and reports it', async () => {
    const inner = memoryStore();
    const store: IdempotencyStore = {
      ...inner,
      settle: (claim, how) =>
        how === 'complete' ? Promise.reject(new Error('write failed')) : inner.settle(claim, how),
    };
    const { receiver, errors } = setup({ store });
    receiver.on('UserSignedIn', () => {});
    const result = await receiver.handle(signedRequest());
    expect(result.status).toBe(200);
    expect(result.outcome).toBe('processed');
    expect(errors[0]).toBeInstanceOf(StoreUnavailableError);
  });
});

describe('exactly once', () => {
  it('runs the handler once for 50 concurrent identical deliveries', async () => {
    const { receiver } = setup();
    let runs = 0;
    receiver.on('UserSignedIn', async () => {
      runs += 1;
      await new Promise((r) => setTimeout(r, 10));
    });
    const request = signedRequest();
    const results = await Promise.all(Array.from({ length: 50 }, () => receiver.handle(request)));
    expect(runs).toBe(1);
    const outcomes = results.map((r) => r.outcome);
    expect(outcomes.filter((o) => o === 'processed')).toHaveLength(1);
    expect(outcomes.every((o) => ['processed', 'in_flight', 'duplicate'].includes(o))).toBe(true);
  });
});

describe('signature over the exact bytes', () => {
  it('uses a hex-looking 64-character secret literally, never decoding it', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const decodedKey = Buffer.from(SECRET, 'hex');
    const wrong = hmacHex(request.body, decodedKey as unknown as string);
    expect(
      (await receiver.handle({ ...request, headers: { ...request.headers, signature: wrong } }))
        .status,
    ).toBe(401);
    expect((await receiver.handle(request)).status).toBe(200);
  });

  it('uses a base64-looking secret literally too', async () => {
    const secret = Buffer.alloc(48, 7).toString('base64'); // 64 characters of base64
    expect(secret).toHaveLength(64);
    const { receiver } = setup({ secret });
    expect((await receiver.handle(signedRequest({}, secret))).status).toBe(200);
  });

  it('rejects a body re-serialised with different whitespace', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const reserialised = JSON.stringify(JSON.parse(request.body), null, 2);
    expect((await receiver.handle({ ...request, body: reserialised })).status).toBe(401);
  });

  it('accepts an uppercase hex signature (the same bytes)', async () => {
    const { receiver } = setup();
    const request = signedRequest();
    const headers = { ...request.headers, signature: request.headers.signature!.toUpperCase() };
    expect((await receiver.handle({ ...request, headers })).status).toBe(200);
  });

  const nonAscii = {
    'raw Cyrillic and emoji': `{"event":"UserSignedIn","timestamp":"${new Date().toISOString()}","idempotencyKey":"ключ-🔑","data":{"name":"Анна Петрова 🎓"}}`,
    '\\u-escaped': `{"event":"UserSignedIn","timestamp":"${new Date().toISOString()}","idempotencyKey":"\\u043a\\u043b\\u044e\\u0447-\\ud83d\\udd11","data":{"name":"\\u0410\\u043d\\u043d\\u0430 \\ud83c\\udf93"}}`,
  };
  for (const [label, text] of Object.entries(nonAscii)) {
    it(`verifies a ${label} body over its exact bytes as Buffer, Uint8Array and string`, async () => {
      const bytes = Buffer.from(text, 'utf8');
      const signature = hmacHex(bytes);
      const headers = { 'content-type': 'application/json', signature };
      const seen: unknown[] = [];
      const forms = [bytes, new Uint8Array(bytes), text];
      for (const body of forms) {
        const { receiver } = setup();
        receiver.on('UserSignedIn', (event) => {
          seen.push([event.idempotencyKey, event.data.name]);
        });
        expect((await receiver.handle({ method: 'POST', headers, body })).outcome).toBe(
          'processed',
        );
      }
      expect(seen).toEqual(
        Array(3).fill(['ключ-🔑', label.startsWith('raw') ? 'Анна Петрова 🎓' : 'Анна 🎓']),
      );
    });
  }
});

describe('headers', () => {
  it('finds headers in a plain object of any letter case, Node headers and Fetch Headers', async () => {
    const request = signedRequest();
    const forms = [
      { 'Content-Type': 'application/json', SIGNATURE: request.headers.signature! },
      { 'content-type': ['application/json'], signature: [request.headers.signature!] },
      new Headers({ 'Content-Type': 'application/json', Signature: request.headers.signature! }),
    ];
    for (const headers of forms) {
      const { receiver } = setup();
      expect((await receiver.handle({ method: 'POST', headers, body: request.body })).status).toBe(
        200,
      );
    }
  });
});

describe('secrets stay out of logs and errors', () => {
  it('never gives the logger or onError a secret, a signature or a body', async () => {
    const lines: string[] = [];
    const capture = (level: string) => (obj: Record<string, unknown>, msg?: string) => {
      lines.push(`${level} ${JSON.stringify(obj)} ${msg ?? ''}`);
    };
    const logger = {
      debug: capture('debug'),
      info: capture('info'),
      warn: capture('warn'),
      error: capture('error'),
    };
    const { receiver, errors } = setup({ logger, handlerTimeoutMs: 20 });
    let calls = 0;
    receiver.on('UserSignedIn', () => {
      calls += 1;
      if (calls === 1) throw new Error('boom');
    });
    const request = signedRequest({ data: { token: 'session-token-value-123' } });
    await receiver.handle(request);
    await receiver.handle(request);
    await receiver.handle(request);
    await receiver.handle({
      ...request,
      headers: { ...request.headers, signature: hmacHex(request.body, 'x') },
    });
    await receiver.handle({ ...request, body: 'not json' });
    await receiver.handle(
      signedRequest({ event: 'PaymentCompleted', data: { token: 'session-token-value-123' } }),
    );
    expect(lines.length).toBeGreaterThan(4);
    const everything = [
      ...lines,
      ...errors.map((e) => `${e.message} ${JSON.stringify(e)} ${e.stack ?? ''}`),
    ].join('\n');
    for (const secret of [SECRET, request.headers.signature!, 'session-token-value-123']) {
      expect(everything).not.toContain(secret);
    }
  });
});

describe('errors', () => {
  it('are recognised across copies of the package by isSchoolhooksError', () => {
    expect(isSchoolhooksError(new ConfigError('x'))).toBe(true);
    expect(isSchoolhooksError(new Error('x'))).toBe(false);
    expect(isSchoolhooksError({ code: 'config' })).toBe(false);
  });

  it('logs an error thrown inside onError and never rethrows it', async () => {
    const logged: unknown[] = [];
    const noop = () => {};
    const receiver = createReceiver({
      secret: SECRET,
      logger: { debug: noop, info: noop, warn: noop, error: (obj) => logged.push(obj) },
    });
    receiver.onError(() => {
      throw new Error('onError broke');
    });
    const result = await receiver.handle({ ...signedRequest(), method: 'PUT' });
    expect(result.status).toBe(405);
    expect(logged).toEqual([{ err: 'onError broke' }]);
  });

  it('tells every onError in turn, and logs a rejection of an async one without rethrowing it', async () => {
    const logged: unknown[] = [];
    const noop = () => {};
    const receiver = createReceiver({
      secret: SECRET,
      logger: { debug: noop, info: noop, warn: noop, error: (obj) => logged.push(obj) },
    });
    const told: string[] = [];
    receiver.onError(async (error) => {
      told.push(`first ${error.code}`);
      await Promise.resolve();
      throw new Error('onError rejected');
    });
    receiver.onError((error) => {
      told.push(`second ${error.code}`);
    });
    const result = await receiver.handle({ ...signedRequest(), method: 'PUT' });
    expect(result.status).toBe(405);
    expect(told).toEqual(['first request_rejected', 'second request_rejected']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(logged).toEqual([{ err: 'onError rejected' }]);
  });
});

describe('receiver telemetry: an observer never changes an answer', () => {
  it('answers as usual when telemetry.start throws, and logs it', async () => {
    const logged: string[] = [];
    const logger = {
      debug() {},
      info() {},
      warn() {},
      error(_fields: Record<string, unknown>, msg?: string) {
        logged.push(msg ?? '');
      },
    };
    const telemetry = {
      start(): never {
        throw new Error('exporter misconfigured');
      },
    };
    const { receiver } = setup({ telemetry, logger });
    receiver.on('UserSignedIn', () => {});
    expect((await receiver.handle(signedRequest())).outcome).toBe('processed');
    expect(logged).toContain('telemetry.start threw');
  });

  it('stores a delivery without a trace context when carrier() throws', async () => {
    const inbox = memoryInbox();
    const telemetry: Telemetry = {
      start: () => ({
        runHandlers: (run) => run(),
        handlersEnded() {},
        carrier() {
          throw new Error('no propagator');
        },
        end() {},
      }),
    };
    const { receiver } = setup({ telemetry, inbox });
    expect((await receiver.handle(signedRequest())).outcome).toBe('queued');
    expect(await inbox.jobs()).toHaveLength(1);
    await inbox.close();
  });

  it('reports timed-out handlers once they settle, with how they ended at last', async () => {
    const records: HandlersRecord[] = [];
    const telemetry: Telemetry = {
      start: () => ({
        runHandlers: (run) => run(),
        handlersEnded: (record) => records.push(record),
        carrier: () => undefined,
        end() {},
      }),
    };
    const gate = deferred();
    const { receiver } = setup({ telemetry, handlerTimeoutMs: 20 });
    receiver.on('UserSignedIn', async () => {
      await gate.promise;
      throw new Error('late failure');
    });
    expect((await receiver.handle(signedRequest())).outcome).toBe('timeout');
    expect(records).toEqual([]);
    gate.resolve();
    await vi.waitFor(() => expect(records).toHaveLength(1));
    expect(records[0]).toMatchObject({ result: 'failed', timedOut: true });
  });
});
