#!/usr/bin/env node
/**
 * Regenerates docs/inspector.md's pictures of the inspector (`schoolhooks listen --ui`) in docs/:
 * starts the bin from the sources, sends a few deliveries (processed, a duplicate, a 401, an
 * invalid payload), and photographs the page in headless Chromium (/usr/bin/chromium).
 *
 *   npm run screenshots
 *
 * Runs under tsx (it imports the TypeScript sources). Nothing here reaches the network.
 * @module
 */

import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDelivery, fixtures } from '../src/testing/index.ts';
import { launchChromium } from '../test/helpers/browser.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const docs = join(root, 'docs');
// A throwaway secret: the pictures must show that the page never prints it.
const secret = 'screenshot-secret-never-shown-0123456789abcdef0123456789abcdef';

const listener = spawn(
  process.execPath,
  [
    '--import',
    'tsx',
    'src/cli/index.ts',
    'listen',
    '--ui',
    '--port',
    '0',
    '--path',
    '/webhooks/school',
  ],
  { cwd: root, env: { ...process.env, SCHOOL_WEBHOOK_SECRET: secret } },
);
let output = '';
listener.stdout.on('data', (chunk) => (output += chunk));
listener.stderr.on('data', (chunk) => (output += chunk));

const browser = await launchChromium();
try {
  for (let i = 0; i < 400 && !output.includes('Inspector on'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  const page = /Inspector on (\S+)/.exec(output)?.[1];
  if (page === undefined) throw new Error(`listen --ui did not start:\n${output}`);
  const receiver = new URL('/webhooks/school', page).href;

  const post = (body, headers) => fetch(receiver, { method: 'POST', headers, body });
  const send = (event, data, idempotencyKey, key = secret) => {
    const delivery = createDelivery(event, data, { secret: key, idempotencyKey });
    return post(delivery.body, delivery.headers);
  };

  await send('UserSignedUp', undefined, 'a3f0c9e2-signup');
  await send('ProductEnrolledToFree', undefined, 'b71d4c05-enrol');
  const payment = createDelivery('PaymentCompleted', undefined, {
    secret,
    idempotencyKey: '5d2e8a41-payment',
  });
  await post(payment.body, payment.headers);
  await post(payment.body, payment.headers); // the platform retried: a duplicate
  await send('UserSignedUp', undefined, 'c94b7e13-wrongkey', 'a-temporary-key-of-an-unsaved-form');
  // A lesson status outside the six the platform names: 422 invalid_payload.
  await send(
    'CourseProgressChanged',
    { ...fixtures.CourseProgressChanged(), status: 'Finished' },
    'e0a6f2d8-progress',
  );
  await send('CourseCompleted', undefined, 'f3c1b9a7-completed');

  const context = await browser.newContext({
    viewport: { width: 1280, height: 860 },
    deviceScaleFactor: 1,
    colorScheme: 'light',
  });
  const tab = await context.newPage();
  await tab.goto(page);
  await tab.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  await tab.screenshot({ path: join(docs, 'inspector-list.png') });

  await tab
    .locator('#list')
    .getByRole('link', { name: /PaymentCompleted, 200 processed/ })
    .click();
  await tab.getByRole('heading', { name: /PaymentCompleted/ }).waitFor();
  await tab.screenshot({ path: join(docs, 'inspector-delivery.png') });

  await tab
    .locator('#list')
    .getByRole('link', { name: /422 invalid_payload/ })
    .click();
  await tab.getByRole('heading', { name: 'Payload issues' }).waitFor();
  await tab.screenshot({ path: join(docs, 'inspector-refused.png') });

  await tab.setViewportSize({ width: 360, height: 740 });
  await tab.goto(page);
  await tab.getByRole('status').filter({ hasText: 'Live' }).waitFor();
  await tab.screenshot({ path: join(docs, 'inspector-narrow.png') });

  if ((await tab.content()).includes(secret)) throw new Error('the page shows the secret');
  console.log('wrote docs/inspector-{list,delivery,refused,narrow}.png');
} finally {
  await browser.close();
  listener.kill('SIGTERM');
}
