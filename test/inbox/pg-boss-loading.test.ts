/**
 * How pgBossInbox loads pg-boss for a `connectionString`: the package missing, a package with no
 * PgBoss class, pg-boss 12's named export and pg-boss 10's CommonJS class. pg-boss is replaced
 * here by a module the test makes (pg-boss 10 is what is installed; `pg-boss12.test.ts` runs the
 * real pg-boss 12 in its own process).
 */

import { afterEach, describe, expect, it, vi } from 'vitest';
import { failureOf } from '../helpers/failure-of.js';

const connectionString = 'postgres://postgres@127.0.0.1:1/none';

/** A pg-boss class that records how it was made and fails its start (nothing else is needed). */
function fakeBossClass() {
  const made: object[] = [];
  class FakeBoss {
    constructor(options: object) {
      made.push(options);
    }
    on() {}
    off() {}
    start(): Promise<never> {
      return Promise.reject(new Error('the fake pg-boss does not start'));
    }
    stop(): Promise<void> {
      return Promise.resolve();
    }
  }
  return { FakeBoss, made };
}

/**
 * How the start of an inbox on `connectionString` fails with `pg-boss` resolving to the exports
 * `factory` gives (every name a module may have is given, as a module's namespace has them all:
 * vitest's mock refuses to read a name its factory left out), and whether it is a `ConfigError`
 * (of the module graph the inbox was loaded in).
 */
async function startWith(
  factory: () => { PgBoss?: unknown; default?: unknown },
): Promise<{ error: Error; isConfigError: boolean }> {
  vi.resetModules();
  vi.doMock('pg-boss', () => ({ PgBoss: undefined, default: undefined, ...factory() }));
  const { pgBossInbox } = await import('../../src/inbox/pg-boss.js');
  const { ConfigError } = await import('../../src/errors.js');
  const inbox = pgBossInbox({ connectionString });
  try {
    const error = await failureOf(inbox.start());
    return { error, isConfigError: error instanceof ConfigError };
  } finally {
    await inbox.close();
  }
}

afterEach(() => {
  vi.doUnmock('pg-boss');
  vi.resetModules();
});

describe('pgBossInbox loading pg-boss', () => {
  it('says to install pg-boss when it cannot be loaded', async () => {
    const { error, isConfigError } = await startWith(() => {
      throw new Error('Cannot find package pg-boss');
    });
    expect(isConfigError).toBe(true);
    // vitest wraps the loader's failure in a message of its own; a reason follows the advice.
    expect(error.message).toMatch(
      /^pgBossInbox: connectionString needs pg-boss installed \(npm install pg-boss\): \S/,
    );
  });

  it.each([
    ['no export at all', () => ({})],
    ['a default export with no class', () => ({ default: {} })],
    ['a PgBoss that is no class', () => ({ PgBoss: 'not a class', default: { PgBoss: 1 } })],
  ])('refuses a pg-boss with %s', async (_, factory) => {
    const { error, isConfigError } = await startWith(factory);
    expect(isConfigError).toBe(true);
    expect(error.message).toBe('pgBossInbox: the installed pg-boss exports no PgBoss class');
  });

  it.each([
    [
      "pg-boss 12's named export",
      (FakeBoss: unknown): { PgBoss?: unknown; default?: unknown } => ({ PgBoss: FakeBoss }),
    ],
    [
      'a named export under default',
      (FakeBoss: unknown): { PgBoss?: unknown; default?: unknown } => ({
        default: { PgBoss: FakeBoss },
      }),
    ],
    [
      "pg-boss 10's CommonJS class",
      (FakeBoss: unknown): { PgBoss?: unknown; default?: unknown } => ({ default: FakeBoss }),
    ],
  ])('makes its pg-boss from %s, with the inbox options', async (_, shape) => {
    const { FakeBoss, made } = fakeBossClass();
    const { error, isConfigError } = await startWith(() => shape(FakeBoss));
    expect(isConfigError).toBe(false);
    expect(error.message).toBe('the fake pg-boss does not start');
    expect(made).toHaveLength(1);
    expect(made[0]).toMatchObject({ connectionString, schedule: false });
  });

  it('prefers the named PgBoss over a default class', async () => {
    const named = fakeBossClass();
    const other = fakeBossClass();
    await startWith(() => ({ PgBoss: named.FakeBoss, default: other.FakeBoss }));
    expect(named.made).toHaveLength(1);
    expect(other.made).toHaveLength(0);
  });
});
