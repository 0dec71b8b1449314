/**
 * Where one server's CPU per request goes beyond another's: two `--cpu-prof` profiles (from
 * `BENCH_PROFILE=<dir>`), each function's share of busy time turned into µs per request with the
 * server's measured CPU µs per request, and the largest differences first.
 *
 * `npx tsx bench/diff-profiles.ts <profile dir A> <CPU µs/req of A> <profile dir B> <CPU µs/req of B> [count]`
 *
 * For example, the node adapter against the hand-written receiver, small body:
 * `npx tsx bench/diff-profiles.ts prof/node-small 94.4 prof/minimal-small 69.7`.
 * A profile covers the server's whole life (warm-up included), so read the figures as shares of
 * the measured CPU, not as exact costs.
 * @module
 */

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { topSelfTime } from './top-self-time.js';

/** µs per request by function (name and file), idle time left out. */
function perRequest(dir: string, cpuUsPerRequest: number): Map<string, number> {
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) throw new Error(`no .cpuprofile in ${dir}`);
  const rows = topSelfTime(join(dir, file), Number.MAX_SAFE_INTEGER).filter(
    (row) => row.name !== '(idle)',
  );
  const busy = rows.reduce((sum, row) => sum + row.share, 0);
  const out = new Map<string, number>();
  for (const row of rows) {
    const key = `${row.name} ${row.where.replace(/:\d+$/, '')}`.trim();
    out.set(key, (out.get(key) ?? 0) + (row.share / busy) * cpuUsPerRequest);
  }
  return out;
}

const [dirA, cpuA, dirB, cpuB, count = '25'] = process.argv.slice(2);
if (dirA === undefined || cpuA === undefined || dirB === undefined || cpuB === undefined) {
  throw new Error('usage: diff-profiles.ts <dir A> <CPU µs/req A> <dir B> <CPU µs/req B> [count]');
}
const a = perRequest(dirA, Number(cpuA));
const b = perRequest(dirB, Number(cpuB));
const rows = [...new Set([...a.keys(), ...b.keys()])]
  .map((name) => ({ name, a: a.get(name) ?? 0, b: b.get(name) ?? 0 }))
  .sort((x, y) => Math.abs(y.a - y.b) - Math.abs(x.a - x.b))
  .slice(0, Number(count));
const f = (us: number) => us.toFixed(1);
console.log('| function | A − B µs/req | A | B |\n| - | -: | -: | -: |');
for (const row of rows)
  console.log(`| ${row.name} | ${f(row.a - row.b)} | ${f(row.a)} | ${f(row.b)} |`);
