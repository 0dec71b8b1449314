/**
 * createReceiver's start-up checks (src/receiving/receiver-settings.ts), each one on its own: a setting that
 * cannot work is a `ConfigError` at start-up that names it (never an event lost later), and a
 * secret with whitespace around it is used as given and warned about in words that say what to do.
 */

import { describe, expect, it } from 'vitest';
import type { ConfigError } from '../src/index.js';
import { createReceiver, type Logger, type ReceiverOptions } from '../src/index.js';
import { configRefusal } from './helpers/failure-of.js';

const SECRET = 'test-secret';

function refusal(options: Partial<ReceiverOptions>): ConfigError {
  return configRefusal(() =>
    createReceiver({ secret: SECRET, logger: false, ...options } as ReceiverOptions),
  );
}

/** A logger that keeps each line's level and message. */
function kept(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const at =
    (level: string) =>
    (_fields: object, message?: string): void =>
      void lines.push(`${level}: ${message ?? ''}`);
  return {
    lines,
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

describe('createReceiver start-up checks', () => {
  it('names each size or duration that is not positive, with what it counts', () => {
    expect(refusal({ maxBodyBytes: 0 }).message).toBe(
      'maxBodyBytes must be a positive number of bytes',
    );
    expect(refusal({ handlerTimeoutMs: -1 }).message).toBe(
      'handlerTimeoutMs must be a positive number of ms',
    );
    expect(refusal({ secretCacheSize: 0 }).message).toBe(
      'secretCacheSize must be a positive number of tenants',
    );
  });

  it('refuses a recordEntities that is not a boolean, and an inbox without enqueue', () => {
    expect(refusal({ recordEntities: 'no' as unknown as boolean }).message).toBe(
      'recordEntities must be true or false, not string',
    );
    expect(refusal({ inbox: {} as NonNullable<ReceiverOptions['inbox']> }).message).toBe(
      'inbox must have an enqueue(delivery) method',
    );
    expect(() =>
      createReceiver({ secret: SECRET, logger: false, recordEntities: false }),
    ).not.toThrow();
  });

  it('warns of a padded secret, saying it is used as given and what to do', () => {
    const { logger, lines } = kept();
    createReceiver({ secret: ` ${SECRET}\n`, logger });
    expect(lines).toEqual([
      'warn: the secret has spaces or a line break around it; it is used exactly as given, so ' +
        'signatures made with the key as shown fail (401): trim it if that was a copy-paste slip',
    ]);
  });
});
