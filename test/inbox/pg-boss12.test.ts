/**
 * pgBossInbox with pg-boss 12, which needs Node >= 22.12: the built package, installed in a
 * consumer directory next to pg-boss 12 (from test/runtimes/node-versions), runs
 * test/runtimes/pg-boss-round.mjs on Node 22 against real Postgres, once with a `boss` it is
 * given and once with a `connectionString` (the inbox imports pg-boss 12 itself).
 */

import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pkg from '../../package.json' with { type: 'json' };
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueTable, useTestPostgres, type TestPostgres } from '../helpers/postgres.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const versions = join(root, 'test', 'runtimes', 'node-versions');
const node22 = join(versions, 'node_modules', 'node22', 'bin', 'node');

let database: TestPostgres;
let consumer = '';
const schemas: string[] = [];

function run(command: string, args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv }) {
  return new Promise<{ code: number | null; output: string }>((resolve, reject) => {
    const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', reject);
    child.once('exit', (code) => resolve({ code, output }));
  });
}

beforeAll(async () => {
  database = await useTestPostgres();
  if (!existsSync(join(root, 'dist', 'postgres.js'))) {
    const built = await run('npm', ['run', 'build', '--silent'], { cwd: root });
    if (built.code !== 0) throw new Error(`npm run build failed:\n${built.output}`);
  }
  if (!existsSync(join(versions, 'node_modules', 'pg-boss12', 'package.json'))) {
    const installed = await run('npm', ['ci', '--no-audit', '--no-fund'], { cwd: versions });
    if (installed.code !== 0)
      throw new Error(`npm ci in node-versions failed:\n${installed.output}`);
  }
  // An app's node_modules: the package as files of its own (so it resolves pg-boss from here,
  // not from the repository's pg-boss 10), its dependencies, and pg-boss 12 as `pg-boss`.
  mkdirSync(join(root, 'node_modules', '.cache'), { recursive: true });
  consumer = mkdtempSync(join(root, 'node_modules', '.cache', 'pg-boss12-'));
  const modules = join(consumer, 'node_modules');
  const installed = join(modules, 'schoolhooks');
  mkdirSync(installed, { recursive: true });
  cpSync(join(root, 'dist'), join(installed, 'dist'), { recursive: true });
  cpSync(join(root, 'package.json'), join(installed, 'package.json'));
  cpSync(join(root, 'fixtures'), join(installed, 'fixtures'), { recursive: true });
  for (const name of Object.keys(pkg.dependencies))
    symlinkSync(join(root, 'node_modules', name), join(modules, name));
  symlinkSync(join(versions, 'node_modules', 'pg-boss12'), join(modules, 'pg-boss'));
  symlinkSync(join(versions, 'node_modules', 'pg'), join(modules, 'pg'));
  cpSync(join(root, 'test', 'runtimes', 'pg-boss-round.mjs'), join(consumer, 'round.mjs'));
}, 300_000);

afterAll(async () => {
  if (consumer !== '') rmSync(consumer, { recursive: true, force: true });
  if (database !== undefined) {
    const admin = new pg.Client({ connectionString: database.url });
    await admin.connect();
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.end();
    await database.close();
  }
});

describe.each(['boss', 'connectionString'])(
  'pgBossInbox on pg-boss 12 and Node 22 (%s)',
  (mode) => {
    it('enqueues over HTTP, dead-letters after its attempts, and retryFailed brings it back to done', async () => {
      const schema = uniqueTable('pgb12');
      schemas.push(schema);
      const { code, output } = await run(node22, ['round.mjs'], {
        cwd: consumer,
        env: { ...process.env, DATABASE_URL: database.url, SCHEMA: schema, MODE: mode },
      });
      const line = output.split('\n').find((text) => text.startsWith('PG_BOSS_ROUND '));
      expect(code, output).toBe(0);
      const seen = JSON.parse(line!.slice('PG_BOSS_ROUND '.length)) as Record<string, unknown>;
      expect(seen['node']).toMatch(/^v22\./);
      // pg-boss 12's tables, which pg-boss 10 (schema version 24 at most) does not have.
      expect(seen['schemaVersion']).toBeGreaterThanOrEqual(26);
      expect(seen['steps']).toEqual([
        { first: { status: 202, outcome: 'queued' } },
        { repeat: 'duplicate' },
        { jobs: ['waiting'] },
        {
          dead: {
            attemptsMade: 2,
            reason: 'handler_failed: CRM is down',
            ran: ['PaymentCompleted@1', 'PaymentCompleted@2'],
          },
        },
        { retried: 1 },
        {
          done: {
            outcome: 'processed',
            attemptsMade: 1,
            ran: ['PaymentCompleted@1', 'PaymentCompleted@2', 'PaymentCompleted@1'],
          },
        },
        'closed',
        { reopened: ['completed'] },
      ]);
    }, 120_000);
  },
);
