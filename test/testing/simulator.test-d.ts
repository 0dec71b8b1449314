import { describe, expectTypeOf, it } from 'vitest';
import { createPlatformSimulator, type EndpointHandler } from '../../src/testing/index.js';

const handler: EndpointHandler = () => ({ status: 200, body: { ok: true } });

describe('simulator endpoint types', () => {
  it('takes only the events the platform offers', () => {
    const simulator = createPlatformSimulator();
    expectTypeOf(simulator.addEndpoint).toBeFunction();
    simulator.addEndpoint({ handler, events: ['PaymentCompleted'] });
    // @ts-expect-error -- not an event the platform offers
    simulator.addEndpoint({ handler, events: ['PaymentComplete'] });
  });
});
