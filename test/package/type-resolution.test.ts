/**
 * A user's TypeScript project reaches every subpath's types, whatever its `moduleResolution`:
 * node10 (`module: commonjs`, which ignores `exports` and reads `typesVersions`), node16 and
 * bundler. The package is the tarball npm would publish, unpacked into a project's node_modules.
 */

import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');

/** A user's file: one import of each kind of subpath, used so a wrong type would not compile. */
const USER_FILE = `
import { createReceiver, type Receiver } from 'schoolhooks';
import { expressMiddleware } from 'schoolhooks/express';
import { nodeListener } from 'schoolhooks/node';
import { createDelivery } from 'schoolhooks/testing';
import { createSchoolApi } from 'schoolhooks/api';
import { createReconciler } from 'schoolhooks/reconcile';

const receiver: Receiver = createReceiver({ secret: 'a-secret' });
receiver.on('PaymentCompleted', (event) => {
  const amount: number = event.data.payment.invoice.totalAmount;
  return void amount;
});
export const middleware = expressMiddleware(receiver);
export const listener = nodeListener(receiver);
export const delivery: string = createDelivery('UserSignedUp', undefined, { secret: 'a-secret' }).body;
export const api = createSchoolApi;
export const reconcile = createReconciler;
// @ts-expect-error: a misspelt option is still an error, so the types are really there
createReceiver({ sekret: 'a-secret' });
`;

const SETTINGS = {
  node10: { module: 'commonjs', moduleResolution: 'node10' },
  node16: { module: 'node16', moduleResolution: 'node16' },
  bundler: { module: 'esnext', moduleResolution: 'bundler' },
} as const;

let project = '';

beforeAll(async () => {
  if (!existsSync(join(root, 'dist', 'index.d.ts'))) {
    await run('npm', ['run', 'build', '--silent'], { cwd: root, timeout: 240_000 });
  }
  // Inside the repository's node_modules, so zod and the peers' types resolve as in an app.
  await mkdir(join(root, 'node_modules', '.cache'), { recursive: true });
  project = await mkdtemp(join(root, 'node_modules', '.cache', 'type-resolution-'));
  const { stdout } = await run(
    'npm',
    ['pack', '--ignore-scripts', '--json', '--pack-destination', project],
    { cwd: root, timeout: 120_000 },
  );
  const [{ filename }] = JSON.parse(stdout) as [{ filename: string }];
  const installed = join(project, 'node_modules', 'schoolhooks');
  await mkdir(installed, { recursive: true });
  await run('tar', ['-xzf', join(project, filename), '-C', installed, '--strip-components=1']);
  await writeFile(join(project, 'package.json'), '{ "name": "an-app", "private": true }');
  await writeFile(join(project, 'index.ts'), USER_FILE);
}, 300_000);

afterAll(async () => {
  if (project !== '') await rm(project, { recursive: true, force: true });
});

describe("a user's project type-checks against the packed package", () => {
  it.each(Object.entries(SETTINGS))(
    'with moduleResolution %s',
    async (name, settings) => {
      const config = join(project, `tsconfig.${name}.json`);
      await writeFile(
        config,
        JSON.stringify({
          compilerOptions: {
            ...settings,
            target: 'es2022',
            strict: true,
            noEmit: true,
            skipLibCheck: true,
            esModuleInterop: true,
            types: ['node'],
          },
          files: ['index.ts'],
        }),
      );
      const result = await run(process.execPath, [tsc, '-p', config], {
        cwd: project,
        timeout: 120_000,
      }).then(
        () => ({ ok: true, output: '' }),
        (error: { stdout?: string }) => ({ ok: false, output: error.stdout ?? String(error) }),
      );
      expect(result.output).toBe('');
      expect(result.ok).toBe(true);
    },
    120_000,
  );
});
