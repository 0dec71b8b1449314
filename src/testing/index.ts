/**
 * schoolhooks/testing: sign and build deliveries, fixture factories, a simulator of the
 * platform's delivery behaviour on a virtual clock, and a mock of the platform's API (session
 * tokens, lists, users, groups and exports).
 * Node only.
 *
 * Not exported on purpose: the fixture JSON loader (use `fixtures`), and the simulator's
 * transport (`exchange`), which are implementation details.
 * @module schoolhooks/testing
 */

// Signing and deliveries
export { signBody } from './sign-body.js';
export { createDelivery } from './create-delivery.js';
export type { DeliveryData, DeliveryOptions, SignedDelivery } from './create-delivery.js';

// Fixtures
export { fixtures, sparseFixtures } from './fixtures.js';
export type { DeepPartial, FixtureFactory, Fixtures } from './fixtures.js';
export { fixtureVariants } from './fixture-variants.js';
export type { FixtureVariant, FixtureVariants } from './fixture-variants.js';

// The platform simulator
export { createPlatformSimulator } from './platform-simulator.js';
export type {
  DeliveryLogEntry,
  DeliveryState,
  OutageKind,
  OutageOptions,
  OutageWindow,
  PlatformSimulator,
  PlatformSimulatorOptions,
  SendArgs,
  SendOptions,
  SentEvent,
  SimulatedEndpoint,
  TestDeliveryOptions,
} from './simulator-types.js';
export type { FaultKind, FaultOptions } from './fault-picker.js';
export { PLATFORM_LIMITS } from '../platform/platform-contract.js';
export type {
  EndpointConfig,
  EndpointHandler,
  EndpointUpdate,
  SimulatedRequest,
  SimulatedResponse,
} from './endpoint-config.js';
export { createVirtualClock } from './virtual-clock.js';
export type { VirtualClock, VirtualClockOptions } from './virtual-clock.js';

// The mock platform API
export { createMockSchoolApi } from './mock-school-api.js';
export type {
  MockSchoolApi,
  MockSchoolApiOptions,
  MockSchoolApiRequest,
  MockSchoolApiUser,
} from './mock-school-api.js';
export type { MockInvoice, MockListItem, MockListItems } from './mock-lists.js';
