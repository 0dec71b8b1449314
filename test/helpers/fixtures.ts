import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { oversizedBody } from '../../src/testing/oversized-body.js';

const root = join(import.meta.dirname, '..', '..', 'fixtures');

export interface FixtureEnvelope {
  event: string;
  timestamp: string;
  idempotencyKey: string;
  data: Record<string, unknown>;
}

/** Every valid fixture body, by event name. */
export function validFixtures(): Map<string, FixtureEnvelope> {
  const out = new Map<string, FixtureEnvelope>();
  for (const file of readdirSync(root)
    .filter((f) => f.endsWith('.json'))
    .sort()) {
    const envelope = JSON.parse(readFileSync(join(root, file), 'utf8')) as FixtureEnvelope;
    out.set(envelope.event, envelope);
  }
  return out;
}

export interface InvalidFixture {
  file: string;
  description: string;
  status: number;
  outcome: string;
  /** Set when the body is made in code (`oversized`) rather than read from a file. */
  generated?: string;
  /** The body, with a JSON envelope's timestamp moved to now so only the intended fault shows. */
  body: Buffer;
}

/** Every invalid fixture of fixtures/invalid/manifest.json. */
export function invalidFixtures(now = new Date()): InvalidFixture[] {
  const dir = join(root, 'invalid');
  const manifest = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as Omit<
    InvalidFixture,
    'body'
  >[];
  return manifest.map((entry) => {
    if (entry.generated === 'oversized') {
      return { ...entry, body: Buffer.from(oversizedBody({ timestamp: now.toISOString() })) };
    }
    // Replace the timestamp in place, so the bytes (and the size) stay as the file has them.
    const text = readFileSync(join(dir, entry.file), 'utf8').replace(
      /("timestamp"\s*:\s*)"[^"]*"/,
      `$1"${now.toISOString()}"`,
    );
    return { ...entry, body: Buffer.from(text) };
  });
}
