// The inspector of `schoolhooks listen --ui`, end to end: the real bin, deliveries sent by the real
// curl binary, and the page in headless Chromium (Debian's package, driven by playwright-core).
// Without /usr/bin/chromium this suite fails; it never skips.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDelivery, fixtures } from '../../src/testing/index.js';
import { launchChromium } from '../helpers/browser.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SECRET = 'Ui7sE3cR9eT1kE5yN0tT4oB8eS6hO2wN3aN7yW1hE9rE5zQ0xV4bN8mL2kJ6hG3f';
const run = promisify(execFile);

let listener: ChildProcess;
let output = '';
let origin = '';
let browser: Browser;
let page: Page;
/** Every response body the page received, and every server-sent message, to search for the secret. */
const responses: Promise<string>[] = [];
const streamed: string[] = [];
const pageErrors: string[] = [];
const snapshots: string[] = [];
/** Every signature sent: none may ever be in the page. */
const signaturesSent: string[] = [];

/** POST `body` to the receiver with the real curl binary; resolves to the answer's JSON. */
async function curl(body: string, signature: string): Promise<{ outcome: string }> {
  signaturesSent.push(signature);
  const { stdout } = await run('curl', [
    '-sS',
    '-X',
    'POST',
    `${origin}/hooks`,
    '-H',
    'content-type: application/json',
    '-H',
    `signature: ${signature}`,
    '--data-binary',
    body,
  ]);
  return JSON.parse(stdout) as { outcome: string };
}

function row(name: RegExp) {
  return page.locator('#list').getByRole('link', { name });
}

/** Keep the page's HTML as it is now, to search for the secret at the end. */
async function snapshot(): Promise<void> {
  snapshots.push(await page.content());
}

async function detailText(): Promise<string> {
  return (await page.locator('#detail').textContent()) ?? '';
}

beforeAll(async () => {
  listener = spawn(
    process.execPath,
    ['--import', 'tsx', join(ROOT, 'src/cli/index.ts'), 'listen', '--ui', '--port', '0'],
    {
      cwd: ROOT,
      env: { ...process.env, SCHOOL_WEBHOOK_SECRET: SECRET },
    },
  );
  listener.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  listener.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  // Chromium is launched while the bin starts.
  browser = await launchChromium();
  for (let i = 0; i < 400 && !output.includes('Inspector on'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const url = /Inspector on (http:\/\/127\.0\.0\.1:\d+)\/_schoolhooks\//.exec(output)?.[1];
  if (url === undefined)
    throw new Error(`listen --ui did not print the inspector's URL:\n${output}`);
  origin = url;

  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await context.newPage();
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('response', (response) => {
    // The live stream never ends: its messages are read through the DevTools protocol below.
    if ((response.headers()['content-type'] ?? '').startsWith('text/event-stream')) return;
    responses.push(response.text().catch(() => ''));
  });
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  cdp.on('Network.eventSourceMessageReceived', (message) => streamed.push(message.data));
  await page.goto(`${origin}/_schoolhooks/`);
  await page.getByRole('status').filter({ hasText: 'Live' }).waitFor();
});

afterAll(async () => {
  await browser?.close();
  if (listener && listener.exitCode === null) {
    const exited = new Promise((resolve) => listener.once('close', resolve));
    listener.kill('SIGTERM');
    await exited;
  }
});

describe('schoolhooks listen --ui in Chromium', () => {
  it('prints the page URL and binds to 127.0.0.1 by default', () => {
    expect(output).toContain(
      `Inspector on ${origin}/_schoolhooks/ (keeps the last 500 deliveries)`,
    );
  });

  it('shows deliveries sent with curl as they arrive, newest first', async () => {
    // A mark on the window: still there at the end means the rows came without a reload.
    await page.evaluate(() => Object.assign(window, { notReloaded: true }));
    const payment = createDelivery('PaymentCompleted', undefined, {
      secret: SECRET,
      idempotencyKey: 'e2e-payment-1',
    });
    expect((await curl(payment.body, payment.headers.signature)).outcome).toBe('processed');
    await row(/PaymentCompleted, 200 processed, key e2e-payment-1/).waitFor();

    const signup = createDelivery('UserSignedUp', undefined, {
      secret: SECRET,
      idempotencyKey: 'e2e-signup-1',
    });
    await curl(signup.body, signup.headers.signature);
    await row(/UserSignedUp, 200 processed, key e2e-signup-1/).waitFor();

    const names = await page
      .locator('#list a')
      .evaluateAll((links) => links.map((link) => link.getAttribute('aria-label')));
    expect(names[0]).toMatch(/^#2 UserSignedUp/);
    expect(names[1]).toMatch(/^#1 PaymentCompleted/);
    expect(await page.locator('#announcer').textContent()).toContain(
      'New delivery #2 UserSignedUp',
    );
    expect(await page.evaluate(() => 'notReloaded' in window)).toBe(true);
    await snapshot();
  });

  it('opens a delivery to its payload, headers and shortened signature', async () => {
    await row(/PaymentCompleted, 200 processed/).click();
    await page.getByRole('heading', { name: '#1 PaymentCompleted' }).waitFor();
    const text = await detailText();
    expect(text).toContain('"totalAmount": 17390');
    expect(text).toContain('"idempotencyKey": "e2e-payment-1"');
    const signature = await page
      .locator('.headers dt', { hasText: /^signature$/ })
      .locator('xpath=following-sibling::dd[1]')
      .textContent();
    expect(signature).toMatch(/^[0-9a-f]{8}…[0-9a-f]{4}$/);
    // Nor is it whole anywhere in the page, the curl command included (it signs in the shell).
    await page.locator('details.curl-box').evaluate((box) => box.setAttribute('open', ''));
    const html = await page.content();
    expect(html).toContain('schoolhooks sign');
    for (const sent of signaturesSent) expect(html).not.toContain(sent);
    // Objects fold: closing the payment hides its fields.
    const payment = page.locator('details.json-node', {
      has: page.locator('> summary', { hasText: '"payment":' }),
    });
    await payment.locator('> summary').click();
    expect(await payment.locator('> .json-children').isVisible()).toBe(false);
    await snapshot();
  });

  it('marks an invalid payload’s Zod issue at its path in the JSON, and lists it', async () => {
    const data = fixtures.PaymentCompleted({
      payment: { invoice: { totalAmount: 'lots' as unknown as number } },
    });
    const invalid = createDelivery('PaymentCompleted', data, {
      secret: SECRET,
      idempotencyKey: 'e2e-invalid-1',
    });
    expect((await curl(invalid.body, invalid.headers.signature)).outcome).toBe('invalid_payload');
    await row(/PaymentCompleted, 422 invalid_payload, key e2e-invalid-1/).click();
    await page.getByRole('heading', { name: 'Payload issues' }).waitFor();

    const marked = page.locator('[data-issue="data.payment.invoice.totalAmount"]');
    expect(await marked.textContent()).toMatch(/"totalAmount": "lots"\s*,?⚠ .*number/);
    const listed = page.getByRole('link', { name: 'data.payment.invoice.totalAmount' });
    await listed.click();
    expect(await marked.evaluate((node) => node === document.activeElement)).toBe(true);
    await snapshot();
  });

  it('replays a delivery’s stored bytes through the receiver: a duplicate', async () => {
    await row(/#1 PaymentCompleted/).click();
    await page.getByRole('heading', { name: '#1 PaymentCompleted' }).waitFor();
    await page.getByRole('button', { name: 'Replay' }).click();
    const replayed = page.locator('#detail .action-status a');
    await replayed.waitFor();
    expect(await replayed.textContent()).toMatch(/^#\d+ PaymentCompleted, 200 duplicate$/);
    expect(await page.locator('#list a').first().getAttribute('aria-label')).toMatch(
      /PaymentCompleted, 200 duplicate, key e2e-payment-1/,
    );
    await replayed.click();
    await expect.poll(detailText).toContain('a replay of #1');
  });

  it('lists the likely causes of a 401', async () => {
    const wrong = createDelivery('UserSignedUp', undefined, {
      secret: 'not-the-endpoint-secret',
      idempotencyKey: 'e2e-wrong-key',
    });
    expect((await curl(wrong.body, wrong.headers.signature)).outcome).toBe('invalid_signature');
    await row(/401 invalid_signature/).click();
    await page.getByRole('heading', { name: 'Why the signature failed' }).waitFor();
    const text = await detailText();
    expect(text).toContain('temporary key');
    expect(text).toContain('the signature covers the raw bytes');
    await snapshot();
  });

  it('colours each row’s edge and its badge by the outcome’s class', async () => {
    const colours = async (name: RegExp) =>
      row(name).evaluate((link) => ({
        edge: getComputedStyle(link).borderLeftColor,
        badge: getComputedStyle(link.querySelector('.badge')!).color,
        fill: getComputedStyle(link.querySelector('.badge')!).backgroundColor,
      }));
    const processed = await colours(/PaymentCompleted, 200 processed/);
    const refused = await colours(/401 invalid_signature/);
    expect(processed.edge).toBe(processed.badge);
    expect(refused.edge).toBe(refused.badge);
    expect(refused.edge).not.toBe(processed.edge);
    expect(refused.fill).not.toBe(processed.fill);
    expect(processed.fill).not.toBe('rgba(0, 0, 0, 0)');
  });

  it('sends a fixture, signed by the server, from the page', async () => {
    await page.getByLabel('Send a fixture, signed').selectOption('CourseCompleted');
    await page.getByRole('button', { name: 'Send', exact: true }).click();
    const sent = page.locator('#send-status a');
    await sent.waitFor();
    expect(await sent.textContent()).toMatch(/^#\d+ CourseCompleted, 200 processed$/);
    await row(/CourseCompleted, 200 processed/).waitFor();
  });

  it('filters by event and by outcome', async () => {
    await page.getByLabel('Outcome').selectOption('class:refused');
    const refused = await page
      .locator('#list a')
      .evaluateAll((links) => links.map((link) => link.getAttribute('aria-label')));
    expect(refused).toHaveLength(2);
    expect(refused.every((name) => /, 4\d\d /.test(name ?? ''))).toBe(true);
    await page.getByLabel('Outcome').selectOption('');
    await page.getByLabel('Event').selectOption('PaymentCompleted');
    expect(await page.locator('#list a').count()).toBe(3);
    await page.getByLabel('Event').selectOption('');
  });

  it('opens a delivery from the keyboard and moves focus to it', async () => {
    await row(/UserSignedUp, 200 processed/).focus();
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: '#2 UserSignedUp' }).waitFor();
    await expect.poll(() => page.evaluate(() => document.activeElement?.id)).toBe('detail');
    await page.keyboard.press('Tab');
    // The next stop is a real control inside the delivery.
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Replay');
  });

  it('fits a 360 px wide screen without sideways scrolling', async () => {
    await page.setViewportSize({ width: 360, height: 800 });
    await row(/#1 PaymentCompleted/).click();
    await page.getByRole('heading', { name: '#1 PaymentCompleted' }).waitFor();
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(
      360,
    );
    await page.setViewportSize({ width: 1280, height: 900 });
  });

  it('never shows the secret nor a whole signature: not in a page, a response or a streamed message', async () => {
    await snapshot();
    const bodies = await Promise.all(responses);
    // The checks below saw real traffic: the page, its assets, the API and the stream.
    expect(bodies.length).toBeGreaterThan(8);
    expect(streamed.length).toBeGreaterThan(5);
    expect(snapshots.length).toBeGreaterThan(4);
    expect(signaturesSent.length).toBeGreaterThan(3);
    for (const text of [...snapshots, ...bodies, ...streamed]) {
      expect(text).not.toContain(SECRET);
      for (const sent of signaturesSent) expect(text).not.toContain(sent);
    }
    expect(output).not.toContain(SECRET);
    for (const sent of signaturesSent) expect(output).not.toContain(sent);
    expect(pageErrors).toEqual([]);
  });
});

describe('listen --ui --secrets-file in Chromium: the tenant of each delivery', () => {
  const TENANT_SECRET = 'Tn4sE8cR2eT6kE0yF3oR7sC1hO5oL9aW2bQ6xV0mN4jK8hG2fD6sA0pO4iU8yT2r';
  let tenants: ChildProcess;
  let tenantOutput = '';
  let tenantOrigin = '';
  let folder = '';
  let tenantPage: Page;
  const seen: Promise<string>[] = [];

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'schoolhooks-ui-tenants-'));
    const file = join(folder, 'tenants.json');
    await writeFile(file, JSON.stringify({ 'school-a': TENANT_SECRET, 'school-b': SECRET }));
    const args = ['listen', '--ui', '--port', '0', '--path', '/hooks', '--secrets-file', file];
    tenants = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/index.ts'), ...args],
      {
        cwd: ROOT,
        env: { ...process.env, SCHOOL_WEBHOOK_SECRET: '' },
      },
    );
    tenants.stdout?.on('data', (chunk: Buffer) => (tenantOutput += chunk.toString()));
    tenants.stderr?.on('data', (chunk: Buffer) => (tenantOutput += chunk.toString()));
    for (let i = 0; i < 400 && !tenantOutput.includes('Inspector on'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    tenantOrigin = /Inspector on (http:\/\/127\.0\.0\.1:\d+)\//.exec(tenantOutput)?.[1] ?? '';
    if (tenantOrigin === '') throw new Error(`listen did not start:\n${tenantOutput}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    tenantPage = await context.newPage();
    tenantPage.on('pageerror', (error) => pageErrors.push(error.message));
    tenantPage.on('response', (response) => {
      if ((response.headers()['content-type'] ?? '').startsWith('text/event-stream')) return;
      seen.push(response.text().catch(() => ''));
    });
    await tenantPage.goto(`${tenantOrigin}/_schoolhooks/`);
    await tenantPage.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  });

  afterAll(async () => {
    if (tenants && tenants.exitCode === null) {
      const exited = new Promise((resolve) => tenants.once('close', resolve));
      tenants.kill('SIGTERM');
      await exited;
    }
    await rm(folder, { recursive: true, force: true });
  });

  it('names the tenant in the row and the view, replays and sends through a tenant', async () => {
    const delivery = createDelivery('PaymentCompleted', undefined, {
      secret: TENANT_SECRET,
      idempotencyKey: 'e2e-tenant-1',
    });
    const answer = await fetch(`${tenantOrigin}/hooks/school-a`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    expect(answer.status).toBe(200);
    const tenantRow = (name: RegExp) => tenantPage.locator('#list').getByRole('link', { name });
    const first = tenantRow(/PaymentCompleted, 200 processed, key e2e-tenant-1, tenant school-a/);
    await first.waitFor();
    expect(await first.locator('.tenant').textContent()).toBe('tenant school-a');
    expect(await tenantPage.locator('#receiver-url').textContent()).toBe(
      `${tenantOrigin}/hooks/{tenant}`,
    );

    await first.click();
    await tenantPage.getByRole('heading', { name: '#1 PaymentCompleted' }).waitFor();
    const tenantFact = tenantPage
      .locator('.facts dt', { hasText: /^Tenant$/ })
      .locator('xpath=following-sibling::dd[1]');
    expect(await tenantFact.textContent()).toBe('school-a');
    await tenantPage.getByRole('button', { name: 'Replay' }).click();
    await tenantRow(/PaymentCompleted, 200 duplicate, key e2e-tenant-1, tenant school-a/).waitFor();

    await tenantPage.getByLabel('Tenant', { exact: true }).selectOption('school-b');
    await tenantPage.getByLabel('Send a fixture, signed').selectOption('CourseCompleted');
    await tenantPage.getByRole('button', { name: 'Send', exact: true }).click();
    await tenantRow(/CourseCompleted, 200 processed, key .*, tenant school-b/).waitFor();

    const texts = [await tenantPage.content(), ...(await Promise.all(seen)), tenantOutput];
    expect(texts.length).toBeGreaterThan(6);
    for (const text of texts) {
      expect(text).not.toContain(TENANT_SECRET);
      expect(text).not.toContain(SECRET);
    }
  });
});

describe('listen --ui in Chromium: the health banner of the receiver’s watchdog', () => {
  const DAY = 24 * 3_600_000;
  let watched: ChildProcess;
  let watchedOutput = '';
  let watchedOrigin = '';
  let healthPage: Page;
  const bodies: Promise<string>[] = [];

  /** POST a signed delivery to the receiver, as the platform does; resolves to its status. */
  async function deliver(delivery: { body: string; headers: Record<string, string> }) {
    const answer = await fetch(`${watchedOrigin}/hooks`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
    });
    await answer.arrayBuffer();
    return answer.status;
  }

  const banner = () => healthPage.locator('#health');

  beforeAll(async () => {
    watched = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src/cli/index.ts'), 'listen', '--ui', '--port', '0'],
      { cwd: ROOT, env: { ...process.env, SCHOOL_WEBHOOK_SECRET: SECRET } },
    );
    watched.stdout?.on('data', (chunk: Buffer) => (watchedOutput += chunk.toString()));
    watched.stderr?.on('data', (chunk: Buffer) => (watchedOutput += chunk.toString()));
    for (let i = 0; i < 400 && !watchedOutput.includes('Inspector on'); i++) {
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    watchedOrigin = /Inspector on (http:\/\/127\.0\.0\.1:\d+)\//.exec(watchedOutput)?.[1] ?? '';
    if (watchedOrigin === '') throw new Error(`listen did not start:\n${watchedOutput}`);
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    healthPage = await context.newPage();
    healthPage.on('pageerror', (error) => pageErrors.push(error.message));
    healthPage.on('response', (response) => {
      if ((response.headers()['content-type'] ?? '').startsWith('text/event-stream')) return;
      bodies.push(response.text().catch(() => ''));
    });
    await healthPage.goto(`${watchedOrigin}/_schoolhooks/`);
    await healthPage.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  });

  afterAll(async () => {
    if (watched && watched.exitCode === null) {
      const exited = new Promise((resolve) => watched.once('close', resolve));
      watched.kill('SIGTERM');
      await exited;
    }
  });

  it('says at_risk after a failed delivery, then ok once its retry succeeds', async () => {
    // Nothing answered yet: ok, and no date the platform would disable the endpoint at.
    await expect.poll(() => banner().getAttribute('data-status')).toBe('ok');
    expect(await banner().locator('time').count()).toBe(0);

    const first = createDelivery('UserSignedUp', undefined, {
      secret: SECRET,
      idempotencyKey: 'e2e-health-ok',
    });
    expect(await deliver(first)).toBe(200);
    // The platform disables an endpoint 14 days after its last success.
    await expect.poll(() => banner().locator('time').getAttribute('datetime')).toMatch(/Z$/);
    const disablesAt = (await banner().locator('time').getAttribute('datetime'))!;
    const health = (await (await fetch(`${watchedOrigin}/_schoolhooks/api/health`)).json()) as {
      lastSuccessAt: string;
      disablesAt: string;
    };
    expect(health.disablesAt).toBe(disablesAt);
    expect(Date.parse(disablesAt) - Date.parse(health.lastSuccessAt)).toBe(14 * DAY);

    // A payload the schema refuses: answered 422, a failed attempt the platform will retry.
    const data = fixtures.PaymentCompleted({
      payment: { invoice: { totalAmount: 'lots' as unknown as number } },
    });
    const failed = createDelivery('PaymentCompleted', data, {
      secret: SECRET,
      idempotencyKey: 'e2e-health-retried',
    });
    expect(await deliver(failed)).toBe(422);
    await expect.poll(() => banner().getAttribute('data-status')).toBe('at_risk');
    expect(await banner().textContent()).toContain('1 delivery at risk');
    await snapshot();

    // Its retry (the same idempotencyKey) succeeds: nothing at risk any more.
    const retried = createDelivery('PaymentCompleted', undefined, {
      secret: SECRET,
      idempotencyKey: 'e2e-health-retried',
    });
    expect(await deliver(retried)).toBe(200);
    await expect.poll(() => banner().getAttribute('data-status')).toBe('ok');
    expect(await banner().textContent()).not.toContain('at risk');

    const texts = [await healthPage.content(), ...(await Promise.all(bodies)), watchedOutput];
    for (const text of texts) expect(text).not.toContain(SECRET);
  });
});
