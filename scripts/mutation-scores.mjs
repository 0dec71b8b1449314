#!/usr/bin/env node
/**
 * The scores table of docs/maintainers/mutation-testing.md, from the JSON reports StrykerJS
 * wrote in reports/mutation/ (`npm run mutate`). Each module's row comes from the newest report
 * that mutated it, so running one module again replaces only its row.
 *
 *   node scripts/mutation-scores.mjs            # the table, in Markdown
 *   node scripts/mutation-scores.mjs --survivors # every mutant left, by module and line
 *
 * Score = (killed + timed out) / (killed + timed out + survived + no coverage), as StrykerJS
 * counts it: mutants that were runtime or compile errors, or ignored, are not judged.
 */

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import process from 'node:process';

const dir = 'reports/mutation';
const reports = readdirSync(dir)
  .filter((name) => name.endsWith('.json') && !name.endsWith('.incremental.json'))
  .map((name) => ({ name, at: statSync(join(dir, name)).mtimeMs }))
  .sort((a, b) => a.at - b.at);

/** Each module's mutants from the newest report that has it. */
const modules = new Map();
for (const { name, at } of reports) {
  const report = JSON.parse(readFileSync(join(dir, name), 'utf8'));
  for (const [file, result] of Object.entries(report.files)) {
    modules.set(relative(process.cwd(), file) || file, { ...result, report: name, at });
  }
}

const rows = [...modules.entries()].sort(([a], [b]) => a.localeCompare(b));

if (process.argv.includes('--survivors')) {
  for (const [file, { source, mutants }] of rows) {
    const lines = source.split('\n');
    for (const mutant of mutants) {
      if (mutant.status !== 'Survived' && mutant.status !== 'NoCoverage') continue;
      const line = mutant.location.start.line;
      console.log(
        `${file}:${line} ${mutant.status} ${mutant.mutatorName} ` +
          `${JSON.stringify(mutant.replacement ?? '').slice(0, 60)} | ${lines[line - 1]?.trim().slice(0, 100)}`,
      );
    }
  }
} else {
  console.log(
    '| module | mutants | killed | timed out | survived | no coverage | score | run (UTC) |',
  );
  console.log('| - | -: | -: | -: | -: | -: | -: | - |');
  for (const [file, { mutants, at }] of rows) {
    const count = (status) => mutants.filter((mutant) => mutant.status === status).length;
    const [killed, timeout, survived, none] = ['Killed', 'Timeout', 'Survived', 'NoCoverage'].map(
      count,
    );
    const judged = killed + timeout + survived + none;
    const score = judged === 0 ? 'n/a' : `${((100 * (killed + timeout)) / judged).toFixed(1)} %`;
    const day = new Date(at).toISOString().slice(0, 16).replace('T', ' ');
    console.log(
      `| \`${file}\` | ${judged} | ${killed} | ${timeout} | ${survived} | ${none} | ${score} | ${day} |`,
    );
  }
}
