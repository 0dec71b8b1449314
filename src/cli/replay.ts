/**
 * `schoolhooks replay`: every JSON file of a folder, each as `send` would send it.
 * @module
 */

import { randomUUID } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { defineCommand, EXIT, requireHttpUrl, UsageError } from './command.js';
import { oversizedBody } from '../testing/oversized-body.js';
import { fileBody } from './delivery-body.js';
import { resolveFixtureFolder } from './fixture-folder.js';
import { postDelivery } from './post-delivery.js';
import { SECRET_OPTION, secretFrom } from './secret.js';
import { SUCCESS_STATUSES_TEXT } from '../platform/platform-contract.js';

/** What a folder's manifest.json says one file should get (as fixtures/invalid/manifest.json). */
interface Expectation {
  file: string;
  /** The body is made here, not read: `oversized`, 1 byte over 1 MiB. */
  generated?: 'oversized';
  status: number;
  outcome?: string;
}

const MANIFEST = 'manifest.json';

/** The `replay` command. */
export const replayCommand = defineCommand({
  name: 'replay',
  summary: 'Send every JSON file in a folder to a URL',
  usage: '<folder> --url URL [--secret S] [--raw]',
  description: `Sends each *.json file of the folder, in name order, as 'send' sends a file: a JSON
object is stamped now and a non-empty idempotencyKey replaced, so a fixture is neither
stale nor a duplicate; anything else goes as it is. Prints one line per file.

A ${MANIFEST} in the folder ([{ "file", "status", "outcome" }], as in fixtures/invalid)
names the answer each file expects; its files are sent too, whatever their extension.
A folder under fixtures/ that is not in the current directory is the one this package
ships: 'schoolhooks replay fixtures/invalid' works from any project.
Exit code 0 when every answer is the expected one (otherwise ${SUCCESS_STATUSES_TEXT}), 1 if not.`,
  options: {
    url: { type: 'string', value: 'URL', help: 'Where to POST (required)' },
    secret: SECRET_OPTION,
    raw: { type: 'boolean', help: "Send every file's bytes exactly as they are, only signed" },
  },
  positionals: true,
  async run({ values, positionals }, io) {
    const [given, ...extra] = positionals;
    if (given === undefined || extra.length > 0) throw new UsageError('name one folder to replay');
    const folder = resolveFixtureFolder(given);
    const url = requireHttpUrl(values.url);
    const secret = secretFrom(values.secret, io, 'replay');

    const expectations = await readManifest(folder);
    const files = await filesOf(folder, expectations);
    if (files.length === 0) throw new UsageError(`${folder} holds no JSON files`);

    let mismatches = 0;
    for (const file of files) {
      const expected = expectations.get(file);
      const { body } =
        expected?.generated === 'oversized'
          ? {
              body: oversizedBody(
                values.raw
                  ? {}
                  : { idempotencyKey: randomUUID(), timestamp: new Date().toISOString() },
              ),
            }
          : await fileBody(join(folder, file), { raw: values.raw });
      const result = await postDelivery(url, body, secret);
      const met = expected
        ? result.status === expected.status &&
          (expected.outcome === undefined || result.outcome === expected.outcome)
        : result.ok;
      if (!met) mismatches++;
      const got = `${result.status}${result.outcome ? ` ${result.outcome}` : ''}`;
      const want = expected
        ? ` (expected ${expected.status}${expected.outcome ? ` ${expected.outcome}` : ''})`
        : '';
      io.out(`${met ? 'ok  ' : 'FAIL'} ${got.padEnd(24)} ${file}${met ? '' : want}`);
    }
    io.out(
      `${files.length} files, ${files.length - mismatches} answered as expected, ${mismatches} not`,
    );
    return mismatches === 0 ? EXIT.ok : EXIT.failure;
  },
});

async function filesOf(
  folder: string,
  expectations: ReadonlyMap<string, Expectation>,
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    throw new UsageError(`${folder}: not a folder that can be read`);
  }
  const chosen = new Set(names.filter((name) => name.endsWith('.json') && name !== MANIFEST));
  for (const [name, expected] of expectations) {
    if (names.includes(name) || expected.generated !== undefined) chosen.add(name);
  }
  return [...chosen].sort();
}

async function readManifest(folder: string): Promise<Map<string, Expectation>> {
  let text: string;
  try {
    text = await readFile(join(folder, MANIFEST), 'utf8');
  } catch {
    return new Map();
  }
  let entries: unknown;
  try {
    entries = JSON.parse(text);
  } catch {
    throw new UsageError(`${join(folder, MANIFEST)} is not JSON`);
  }
  if (!Array.isArray(entries) || !entries.every(isExpectation)) {
    throw new UsageError(`${join(folder, MANIFEST)} must be a list of { file, status, outcome? }`);
  }
  return new Map(entries.map((entry) => [entry.file, entry]));
}

function isExpectation(value: unknown): value is Expectation {
  if (typeof value !== 'object' || value === null) return false;
  const { file, status, outcome, generated } = value as Record<string, unknown>;
  return (
    typeof file === 'string' &&
    (generated === undefined || generated === 'oversized') &&
    !file.includes('/') &&
    !file.includes('\\') &&
    Number.isInteger(status) &&
    (outcome === undefined || typeof outcome === 'string')
  );
}
