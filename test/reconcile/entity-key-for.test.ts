/**
 * entityKeyFor names a listed entity by the key entityOf gives the webhooks about it: the same
 * record, whichever of the two handles the entity first.
 */

import { describe, expect, it } from 'vitest';
import { entityKeyFor, entityOf } from '../../src/platform/entity-of.js';

describe('entityKeyFor', () => {
  it.each<[Parameters<typeof entityKeyFor>[0], string, Record<string, unknown>]>([
    ['invoice', 'PaymentCompleted', { payment: { invoice: { id: 877051 } } }],
    ['access', 'ProductEnrolledViaPayment', { access: { id: 31 } }],
    ['access', 'ProductEnrolledByInviteLink', { access: { id: 31 } }],
    ['certificate', 'CertificateIssued', { certificate: { id: 4411 } }],
    ['user', 'UserSignedUp', { user: { id: 1937465 } }],
    ['user', 'UserCreatedViaLms', { user: { id: 1937465 } }],
  ])('names a listed %s as entityOf names %s', (kind, event, data) => {
    const id = JSON.stringify(data).match(/"id":(\d+)/)![1]!;
    expect(entityKeyFor(kind, Number(id))).toBe(entityOf({ event, data })!.key);
  });

  it('escapes a string id as entityOf does, and gives nothing for an unusable one', () => {
    const data = { user: { id: 'a:b%c' } };
    expect(entityKeyFor('user', 'a:b%c')).toBe(entityOf({ event: 'UserSignedUp', data })!.key);
    expect(entityKeyFor('user', 'a:b%c')).toBe('user:a%3Ab%25c');
    expect(entityKeyFor('user', '')).toBeUndefined();
    expect(entityKeyFor('user', Number.NaN)).toBeUndefined();
  });
});
