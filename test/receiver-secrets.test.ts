import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, createReceiver, type Logger } from '../src/index.js';
import { signedRequest } from './helpers/signed.js';

const LIVE = 'whsec_live_7Hq2Zr9LmX4pV8cN1bT6yK3wE5uJ0aD';

/** Every piece of `secret` four characters or longer: none may appear in a message. */
function piecesOf(secret: string): string[] {
  const pieces: string[] = [];
  for (let i = 0; i + 4 <= secret.length; i++) pieces.push(secret.slice(i, i + 4));
  return pieces;
}

function configErrorOf(secret: unknown): ConfigError {
  try {
    createReceiver({ secret: secret as string, logger: false });
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return error as ConfigError;
  }
  throw new Error('createReceiver accepted it');
}

describe('secrets are checked once, at start-up', () => {
  afterEach(() => void vi.restoreAllMocks());

  it.each([
    ['an empty secret next to a real one', [LIVE, ''], 'secret #2 of the list is empty'],
    ['a whitespace-only one', [LIVE, '   '], 'secret #2 of the list is whitespace only'],
    ['a line break only', ['\n', LIVE], 'secret #1 of the list is whitespace only'],
    ['a number', [LIVE, 42], 'secret #2 of the list must be a string, not number'],
    ['null', [LIVE, null], 'secret #2 of the list must be a string, not null'],
  ])('refuses %s, naming its place and no secret of the list', (_, secret, message) => {
    const error = configErrorOf(secret);
    expect(error.message).toBe(message);
    for (const piece of piecesOf(LIVE)) expect(error.message).not.toContain(piece);
  });

  it.each([
    ['an empty string', '', 'secret is empty'],
    ['a whitespace-only string', ' \t ', 'secret is whitespace only'],
    ['an empty list', [], 'secret must be a non-empty string or a non-empty list of them'],
    ['a number', 7, 'secret must be a non-empty string or a non-empty list of them'],
  ])('refuses %s', (_, secret, message) => {
    expect(configErrorOf(secret).message).toBe(message);
  });

  it('accepts a secret with whitespace around it, uses it as given, and warns once', async () => {
    const padded = ` ${LIVE}\n`;
    const lines: string[] = [];
    const logger: Logger = {
      debug: () => {},
      info: () => {},
      warn: (fields, msg) => void lines.push(`${msg} ${JSON.stringify(fields)}`),
      error: (fields, msg) => void lines.push(`${msg} ${JSON.stringify(fields)}`),
    };
    const receiver = createReceiver({ secret: ['x'.repeat(64), padded], logger }).onAny(() => {});
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^secret #2 of the list has spaces or a line break around it/);
    for (const piece of piecesOf(LIVE)) expect(lines[0]).not.toContain(piece);
    // Signed with the key exactly as given, a delivery verifies: nothing is trimmed silently.
    expect((await receiver.handle(signedRequest({}, padded))).status).toBe(200);
    expect((await receiver.handle(signedRequest({}, LIVE))).status).toBe(401);
    expect(lines.filter((line) => line.includes('around it'))).toHaveLength(1);
  });

  it('warns on the console without a logger, and not at all with logger: false', () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    createReceiver({ secret: `${LIVE} ` });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/^schoolhooks: the secret has spaces or a line break/);
    expect(String(warn.mock.calls[0]![0])).not.toContain(LIVE);
    createReceiver({ secret: `${LIVE} `, logger: false });
    createReceiver({ secret: LIVE });
    expect(warn).toHaveBeenCalledTimes(1);
  });
});
