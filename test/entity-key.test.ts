// The keys of src/keys/delivery-key.ts: an entity's key (the ordering guard's) is never a delivery's
// or a run's, and the same entity under two tenants is two keys.
import { describe, expect, it } from 'vitest';
import { deliveryKeyOf, entityKeyOf, runKeyOf } from '../src/keys/delivery-key.js';

const TENANTS = [undefined, 'school-a', 'school-b', 'null', '', '\ud800', '\0'];
const NAMES = [
  'progress:1:2:3',
  'invoice:7',
  '~["entity",null,"invoice:7"]',
  '["entity",null,"invoice:7"]',
  '~',
  '',
  'a\ud800',
  'a\udc00',
  'a\0',
];

describe('entityKeyOf', () => {
  it('frames the entity and its tenant as the other derived keys do', () => {
    expect(entityKeyOf('progress:1:2:3', undefined)).toBe('~["entity",null,"progress:1:2:3"]');
    expect(entityKeyOf('invoice:7', 'school-a')).toBe('~["entity","school-a","invoice:7"]');
  });

  it('gives the same entity under two tenants (and under none) different keys', () => {
    const keys = TENANTS.map((tenant) => entityKeyOf('invoice:7', tenant));
    expect(new Set(keys).size).toBe(TENANTS.length);
  });

  it('never gives an entity key that is a delivery key or a run key, whatever the strings', () => {
    const entities = new Set<string>();
    const others = new Set<string>();
    for (const tenant of TENANTS) {
      for (const name of NAMES) {
        entities.add(entityKeyOf(name, tenant));
        const delivery = deliveryKeyOf(name, tenant);
        others.add(delivery);
        others.add(runKeyOf(delivery));
      }
    }
    expect(entities.size).toBe(TENANTS.length * NAMES.length);
    for (const key of entities) expect(others.has(key), key).toBe(false);
  });

  it('gives an idempotencyKey spelt as an entity key a delivery key of its own', () => {
    const spelt = entityKeyOf('invoice:7', undefined);
    expect(deliveryKeyOf(spelt, undefined)).not.toBe(spelt);
  });
});
