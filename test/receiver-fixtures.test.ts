import { describe, expect, it } from 'vitest';
import { createReceiver, FIXED_CONTRACT_EVENTS, type WebhookEvent } from '../src/index.js';
import { invalidFixtures, validFixtures } from './helpers/fixtures.js';
import { SECRET, signedRaw, signedRequest } from './helpers/signed.js';

describe('fixtures through the receiver', () => {
  const fixtures = validFixtures();

  it('has one fixture per fixed-contract event', () => {
    expect([...fixtures.keys()].sort()).toEqual([...FIXED_CONTRACT_EVENTS].sort());
  });

  for (const name of FIXED_CONTRACT_EVENTS) {
    it(`validates ${name} and hands its typed data to the ${name} handler`, async () => {
      const envelope = fixtures.get(name)!;
      const receiver = createReceiver({ secret: SECRET });
      const seen: WebhookEvent[] = [];
      receiver.on(name, (event) => {
        seen.push(event as WebhookEvent);
      });
      const result = await receiver.handle(
        signedRequest({ ...envelope, timestamp: new Date().toISOString() }),
      );
      expect(result.outcome).toBe('processed');
      expect(seen).toHaveLength(1);
      expect(seen[0]?.event).toBe(name);
      expect(seen[0]?.data).toEqual(envelope.data);
    });
  }

  for (const fixture of invalidFixtures()) {
    it(`answers ${fixture.status} ${fixture.outcome}: ${fixture.description}`, async () => {
      const receiver = createReceiver({ secret: SECRET });
      receiver.onAny(() => {});
      const result = await receiver.handle(signedRaw(fixture.body));
      expect({ status: result.status, outcome: result.outcome }).toEqual({
        status: fixture.status,
        outcome: fixture.outcome,
      });
    });
  }
});
