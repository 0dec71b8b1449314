/**
 * Which files of src/ one delivery runs code in: an Express app on the memory store, one signed
 * PaymentCompleted sent to it over HTTP, and V8's precise coverage taken around that delivery
 * alone (after a first delivery warmed every module up, so code run at import time or once per
 * receiver is not counted). Prints the files, one a line, repo-relative, and their count;
 * `--functions` adds the functions that ran in each; `--json` prints the files as a JSON array. Run with `npx tsx scripts/delivery-files.ts`;
 * test/package/delivery-files.test.ts holds the count to its budget.
 * @module
 */

import { Session } from 'node:inspector/promises';
import type { AddressInfo } from 'node:net';
import { relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import express from 'express';
import { expressMiddleware } from '../src/adapters/express.js';
import { createReceiver, memoryStore } from '../src/index.js';
import { createDelivery } from '../src/testing/index.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const secret = 'delivery-files-secret';

const receiver = createReceiver({ secret, store: memoryStore() });
receiver.on('PaymentCompleted', () => {});
const app = express();
app.post('/webhooks', expressMiddleware(receiver));
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhooks`;

/** Sends one new signed PaymentCompleted and checks it was processed. */
async function deliver(): Promise<void> {
  const { body, headers } = createDelivery('PaymentCompleted', undefined, { secret });
  const response = await fetch(url, { method: 'POST', headers, body });
  const answer = (await response.json()) as { outcome?: string };
  if (response.status !== 200 || answer.outcome !== 'processed') {
    throw new Error(`the delivery was answered ${response.status} ${JSON.stringify(answer)}`);
  }
}

const session = new Session();
session.connect();
await session.post('Profiler.enable');
await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
await deliver();
// Taking the coverage resets its counts: what the next take reports ran in between.
await session.post('Profiler.takePreciseCoverage');
await deliver();
const { result } = await session.post('Profiler.takePreciseCoverage');
await session.post('Profiler.stopPreciseCoverage');
session.disconnect();
server.close();

const sources = `${root}src/`;
const ran = result
  .filter(({ url: script }) => script.startsWith('file://'))
  .filter(({ url: script }) => fileURLToPath(script).startsWith(sources))
  .map(({ url: script, functions }) => ({
    file: relative(root, fileURLToPath(script)).split('\\').join('/'),
    functions: functions.filter(({ ranges }) => ranges[0]!.count > 0),
  }))
  // The test kit signed the deliveries: it is the platform's part, not the receiver's.
  .filter(({ file, functions }) => functions.length > 0 && !file.startsWith('src/testing/'))
  .sort((a, b) => a.file.localeCompare(b.file));
if (process.argv.includes('--json')) {
  console.log(JSON.stringify(ran.map(({ file }) => file)));
} else {
  // With --functions, each file's functions that ran (`(anonymous)` for an arrow function).
  const named = process.argv.includes('--functions');
  for (const { file, functions } of ran) {
    const names = functions.map(({ functionName }) => functionName || '(anonymous)');
    console.log(named ? `${file}: ${names.join(', ')}` : file);
  }
  console.log(`${ran.length} files`);
}
