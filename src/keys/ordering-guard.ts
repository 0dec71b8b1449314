/**
 * The ordering guard (`on(name, handler, { latestOnly: true })`, docs/receiving.md): which entity
 * a delivery takes with its key, at which version. The store takes it in the delivery's claim and
 * records the version then (src/stores/types.ts): an older state is `superseded` from then on,
 * even if the process dies before the handlers end.
 * @module
 */

import { entityKeyOf } from './delivery-key.js';
import { entityOf } from '../platform/entity-of.js';
import type { WebhookEvent } from '../platform/events/index.js';
import type { VersionRequest } from '../stores/types.js';

/**
 * The entity a delivery of `event` must take, at its version (the event's timestamp), or
 * undefined when its handlers run whatever the order: none is `latestOnly`, or its payload names
 * no entity (entity-of.ts).
 */
export function versionToTake(
  event: WebhookEvent<string>,
  timestampMs: number,
  tenant: string | undefined,
  { latestOnly, dedupTtlMs }: OrderingSettings,
): VersionRequest | undefined {
  if (latestOnly === undefined || !latestOnly(event.event)) return undefined;
  const entity = entityOf(event);
  if (entity === undefined) return undefined;
  return { entity: entityKeyOf(entity.key, tenant), versionMs: timestampMs, ttlMs: dedupTtlMs };
}

/** What the guard reads of the receiver's settings. */
export interface OrderingSettings {
  /** Whether the handlers of an event run for its newest state only (the handler registry's). */
  readonly latestOnly?: ((event: string) => boolean) | undefined;
  /** How long an entity's newest version is remembered: as long as a completed key. */
  readonly dedupTtlMs: number;
}
