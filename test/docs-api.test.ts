/**
 * docs/api.md's blocks run as written (`schoolhooks` resolved to the sources), against a mock API
 * this test starts: the recipe that turns a PaymentCompleted into a member of the course's group
 * with sign-in links, through its webhook handler and its reconcile handler, and the offline tour
 * of the users, groups and exports. (Every block is also type-checked by docs-snippets.test.ts.)
 */

import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { createMockSchoolApi, type MockSchoolApi } from '../src/testing/mock-school-api.js';
import { SECRET } from './helpers/deliveries.js';
import { codeBlocks, ROOT } from './helpers/markdown.js';

const run = promisify(execFile);
const DIR = join(ROOT, '.work', `docs-api-${process.pid}`);
const HOUR = 3_600_000;
const blocks = codeBlocks('docs/api.md').filter((block) => block.lang === 'ts');

let mock: MockSchoolApi | undefined;

afterEach(async () => {
  await mock?.close();
  mock = undefined;
});

afterAll(() => {
  rmSync(DIR, { recursive: true, force: true });
});

/** Runs `source` as an ES module with `env`; resolves to what it printed. */
async function runModule(name: string, source: string, env: Record<string, string> = {}) {
  mkdirSync(DIR, { recursive: true });
  const file = join(DIR, `${name}.mts`);
  writeFileSync(file, source);
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', '--import', './test/helpers/source-packages.mjs', file],
    { cwd: ROOT, env: { ...process.env, ...env }, timeout: 60_000 },
  );
  return stdout;
}

describe("docs/api.md's recipe, run", () => {
  it('makes the payer of a webhook and the payer only a reconcile run finds members of the group, each welcomed once', async () => {
    const paidAt = new Date(Date.now() - 24 * HOUR).toISOString();
    mock = await createMockSchoolApi({
      users: [5121, 5122],
      lists: {
        invoices: [
          // Paid: one whose webhook arrives, one the platform gave up on.
          {
            invoiceId: 900,
            createdAt: paidAt,
            user: { id: 5121, email: 'ada@example.com' },
            products: [{ courseId: 301 }],
            paymentStatus: 'Completed',
          },
          {
            invoiceId: 901,
            createdAt: paidAt,
            user: { id: 5122, email: 'alan@example.com' },
            products: [{ courseId: 301 }],
            paymentStatus: 'Completed',
          },
        ],
      },
    });
    const recipe = blocks[0]!.body.replace("'https://api.example.com'", `'${mock.url}'`);
    const mailer = `const mails: { to: string; text: string }[] = [];
const mailer = { send: async (mail: { to: string; text: string }) => void mails.push(mail) };
`;
    const drive = `
import { createDelivery, fixtures } from 'schoolhooks/testing';
const data = fixtures.PaymentCompleted({ payment: { invoice: { id: 900, user: { id: 5121, email: 'ada@example.com' } } } });
data.payment.invoice.products = [{ id: 1, product: { id: 2, course: { id: 301, name: 'Algebra' } } }] as never;
const delivery = createDelivery('PaymentCompleted', data, { secret: process.env.SCHOOL_WEBHOOK_SECRET! });
const answer = await receiver.handle({ method: 'POST', headers: delivery.headers, body: delivery.body });
const report = await reconciler.run({ since: new Date(Date.now() - 48 * 3_600_000) });
const again = await reconciler.run({ since: new Date(Date.now() - 48 * 3_600_000) });
console.log(JSON.stringify({
  status: answer.status,
  recovered: [report.recovered, again.recovered],
  mails: mails.map((mail) => [mail.to, mail.text.includes('___uat='), mail.text.includes('serviceapp://')]),
}));
`;
    const stdout = await runModule('recipe', mailer + recipe + drive, {
      SCHOOL_WEBHOOK_SECRET: SECRET,
      SCHOOL_API_KEY: 'test-api-key',
      SCHOOL_SELLER_ID: '1',
      SCHOOL_ID: '1',
    });

    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).toEqual({
      status: 200,
      recovered: [1, 0],
      mails: [
        ['ada@example.com', true, true],
        ['alan@example.com', true, true],
      ],
    });
    expect(mock.groupMembers(12)).toEqual([5121, 5122]);
    expect([mock.sessions(5121), mock.sessions(5122)].map((sessions) => sessions.length)).toEqual([
      1, 1,
    ]);
  }, 90_000);
});

describe("docs/api.md's tour of users, groups and exports, run", () => {
  it('prints what its comments say', async () => {
    const tour = blocks.find((block) => block.body.includes('api.exportQuery('))!;

    const stdout = await runModule('tour', tour.body);

    expect(stdout.trim()).toMatch(/^true true 250 0 export-[\w-]+\.csv$/);
  }, 90_000);
});
