// Every outcome of the receiver's table, each provoked through `receiver.handle()`: shared by
// the tests of each consumer of the table (the answer, the log, telemetry, the inspector).
import {
  memoryInbox,
  type IdempotencyStore,
  type Inbox,
  type Outcome,
  type Receiver,
  type ReceiverOptions,
  type WebhookResult,
} from '../../src/index.js';
import { deferred, hmacHex, signedRaw, signedRequest } from './signed.js';

/** A store whose every call fails, as a Redis that went away. */
const brokenStore: IdempotencyStore = {
  claim: () => Promise.reject(new Error('ECONNREFUSED redis://:hunter2@10.0.0.1')),
  settle: () => Promise.resolve(),
  peek: () => Promise.reject(new Error('ECONNREFUSED redis://:hunter2@10.0.0.1')),
};

/** An inbox that cannot store anything. */
const brokenInbox: Inbox = {
  enqueue: () => Promise.reject(new Error('READONLY redis://:hunter2@10.0.0.1')),
};

/** Makes the receiver a scenario runs on, with some options of its own. */
export type MakeReceiver = (options?: Partial<ReceiverOptions>) => Receiver;

/**
 * How each outcome of the status table is provoked, through `receiver.handle()`; the last
 * result is the one under test, the ones before it set the stage. The receiver must have an
 * onError handler (failures are expected).
 */
export const OUTCOME_SCENARIOS: Record<
  Outcome,
  (receiver: MakeReceiver) => Promise<WebhookResult[]>
> = {
  async processed(make) {
    const receiver = make().on('UserSignedIn', () => {});
    return [await receiver.handle(signedRequest())];
  },
  async duplicate(make) {
    const receiver = make().on('UserSignedIn', () => {});
    const request = signedRequest();
    return [await receiver.handle(request), await receiver.handle(request)];
  },
  async ignored(make) {
    return [await make().handle(signedRequest({ event: 'SomethingNew' }))];
  },
  async method_not_allowed(make) {
    return [await make().handle({ ...signedRequest(), method: 'GET' })];
  },
  async unsupported_media_type(make) {
    const request = signedRequest();
    const headers = { ...request.headers, 'content-type': 'text/plain' };
    return [await make().handle({ ...request, headers })];
  },
  async body_unavailable(make) {
    const request = signedRequest();
    return [await make().handle({ ...request, body: JSON.parse(request.body) as never })];
  },
  async too_large(make) {
    return [await make({ maxBodyBytes: 64 }).handle(signedRaw('x'.repeat(65)))];
  },
  async unknown_tenant(make) {
    const receiver = make({ secret: () => undefined });
    return [await receiver.handle({ ...signedRequest(), tenant: 'no-such-school' })];
  },
  async secret_unavailable(make) {
    const receiver = make({
      secret: () => Promise.reject(new Error('ECONNREFUSED postgres://app:hunter2@10.0.0.1')),
    });
    return [await receiver.handle({ ...signedRequest(), tenant: 'school-a' })];
  },
  async invalid_signature(make) {
    const request = signedRequest();
    const headers = { ...request.headers, signature: hmacHex(request.body, 'another secret') };
    return [await make().handle({ ...request, headers })];
  },
  async malformed(make) {
    return [await make().handle(signedRaw('{"event":"UserSignedIn"'))];
  },
  async stale(make) {
    const timestamp = new Date(Date.now() - 73 * 3_600_000).toISOString();
    return [await make().handle(signedRequest({ timestamp }))];
  },
  async invalid_payload(make) {
    const data = { payment: { id: 'not a number' } };
    return [await make().handle(signedRequest({ event: 'PaymentCompleted', data }))];
  },
  async conflict(make) {
    const receiver = make().on('UserSignedIn', () => {});
    const first = signedRequest({ idempotencyKey: 'shared-key', data: { n: 1 } });
    const second = signedRequest({ idempotencyKey: 'shared-key', data: { n: 2 } });
    return [await receiver.handle(first), await receiver.handle(second)];
  },
  async in_flight(make) {
    const started = deferred();
    const gate = deferred();
    const receiver = make().on('UserSignedIn', () => {
      started.resolve();
      return gate.promise;
    });
    const request = signedRequest();
    const first = receiver.handle(request);
    await started.promise;
    const second = await receiver.handle(request);
    gate.resolve();
    return [await first, second];
  },
  async superseded(make) {
    const receiver = make().on('CourseProgressChanged', () => {}, { latestOnly: true });
    // One lesson's progress: the newer state processed first, then an older one of it arrives.
    const data = { user: { id: 1937465 }, course: { id: 73120 }, lessonId: 884213 };
    const at = (agoMs: number) => new Date(Date.now() - agoMs).toISOString();
    const newer = signedRequest({ event: 'CourseProgressChanged', data, timestamp: at(1_000) });
    const older = signedRequest({ event: 'CourseProgressChanged', data, timestamp: at(60_000) });
    return [await receiver.handle(newer), await receiver.handle(older)];
  },
  async store_unavailable(make) {
    const receiver = make({ store: brokenStore }).on('UserSignedIn', () => {});
    return [await receiver.handle(signedRequest())];
  },
  async handler_failed(make) {
    const receiver = make().on('UserSignedIn', () => {
      throw new Error('database down');
    });
    return [await receiver.handle(signedRequest())];
  },
  async timeout(make) {
    const gate = deferred();
    const receiver = make({ handlerTimeoutMs: 20 }).on('UserSignedIn', () => gate.promise);
    const result = await receiver.handle(signedRequest());
    gate.resolve();
    return [result];
  },
  async queued(make) {
    return [await make({ inbox: memoryInbox() }).handle(signedRequest())];
  },
  async inbox_unavailable(make) {
    return [await make({ inbox: brokenInbox }).handle(signedRequest())];
  },
};
