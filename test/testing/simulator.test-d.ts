import { describe, expectTypeOf, it } from 'vitest';
import {
  createPlatformSimulator,
  type EndpointHandler,
  type OutageKind,
} from '../../src/testing/index.js';

const handler: EndpointHandler = () => ({ status: 200, body: { ok: true } });

describe('simulator endpoint types', () => {
  it('takes only the events the platform offers', () => {
    const simulator = createPlatformSimulator();
    expectTypeOf(simulator.addEndpoint).toBeFunction();
    simulator.addEndpoint({ handler, events: ['PaymentCompleted'] });
    // @ts-expect-error -- not an event the platform offers
    simulator.addEndpoint({ handler, events: ['PaymentComplete'] });
  });

  it('takes the options of each kind of outage, and no option of another kind', () => {
    const simulator = createPlatformSimulator();
    simulator.takeDown('shop', { forMs: 1000 });
    simulator.takeDown('shop', { forMs: 1000, as: 'down', from: 0 });
    simulator.takeDown('shop', { forMs: 1000, as: 'wrong_secret', secret: 'old' });
    simulator.takeDown('shop', { forMs: 1000, as: 'status', status: 500 });
    simulator.takeDown('shop', { forMs: 1000, as: 'timeout' });
    // @ts-expect-error -- not a kind of outage
    simulator.takeDown('shop', { forMs: 1000, as: 'slow' });
    // @ts-expect-error -- a status is for { as: 'status' } only
    simulator.takeDown('shop', { forMs: 1000, as: 'timeout', status: 500 });
    // @ts-expect-error -- a secret is for { as: 'wrong_secret' } only
    simulator.takeDown('shop', { forMs: 1000, as: 'status', secret: 'old' });
    // @ts-expect-error -- forMs is required
    simulator.takeDown('shop', { as: 'timeout' });
    expectTypeOf<OutageKind>().toEqualTypeOf<'down' | 'wrong_secret' | 'status' | 'timeout'>();
  });
});
