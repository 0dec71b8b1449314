/**
 * The oversized delivery of the invalid fixtures (`fixtures/invalid/manifest.json`, entry
 * `oversized.json`), generated where it is used rather than shipped as a 1 MB file.
 * @module
 */

import { ConfigError } from '../errors.js';
import { fixtureData } from './fixtures.js';
import { serializeEnvelope } from './create-delivery.js';
import { RECEIVER_DEFAULTS } from '../defaults.js';

/** What the manifest's `generated` field names. @internal */
export const GENERATED_BODIES = ['oversized'] as const;

/**
 * A valid UserSignedUp envelope whose `data` carries a `padding` string so the whole body is
 * exactly `bytes` long (default: 1 byte over the receiver's default `maxBodyBytes`): only its size is wrong. @internal
 */
export function oversizedBody({
  bytes = RECEIVER_DEFAULTS.maxBodyBytes + 1,
  idempotencyKey = 'bd37ae80-b54e-4b12-a360-517c7fd058f4',
  timestamp = '2026-10-01T10:00:00.000Z',
}: { bytes?: number; idempotencyKey?: string; timestamp?: string } = {}): string {
  const envelope = (padding: string): string =>
    serializeEnvelope({
      event: 'UserSignedUp',
      timestamp,
      idempotencyKey,
      data: { ...fixtureData('UserSignedUp'), padding },
    });
  const base = new TextEncoder().encode(envelope('')).byteLength;
  if (bytes < base) throw new ConfigError(`an oversized body is at least ${base} bytes`);
  return envelope('x'.repeat(bytes - base));
}
