#!/usr/bin/env node
/**
 * After tsup: the built types of `schoolhooks/postgres` augment the core's `HandlerTransactions`
 * (so `ctx.transaction` is pg's `PoolClient`). The source names the core's module by a relative
 * path, which the bundled declarations copy verbatim and which names nothing next to them; this
 * names it `'schoolhooks'`, the module users import it from. Fails if there is nothing to name.
 * @module
 */

import { readFileSync, writeFileSync } from 'node:fs';

const FROM = "declare module '../receiving/run-handlers.js'";
const TO = "declare module 'schoolhooks'";

for (const file of ['dist/postgres.d.ts', 'dist/postgres.d.cts']) {
  const text = readFileSync(file, 'utf8');
  if (!text.includes(FROM)) {
    console.error(`${file}: no "${FROM}" to rename`);
    process.exit(1);
  }
  writeFileSync(file, text.replaceAll(FROM, TO));
}
