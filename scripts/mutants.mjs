#!/usr/bin/env node
/**
 * The hand-written mutants (`npm run mutants`): realistic bugs StrykerJS cannot plant (an
 * operator swapped for another family's, a call replaced, an SQL fragment or a Lua line changed),
 * each listed once in scripts/mutants.json with the test files that must catch it.
 *
 * For each mutant: replace its `find` text (which must occur exactly once in its file) with its
 * `replace` text, run its test files with vitest, expect at least one test to fail, and restore
 * the file, always (also on Ctrl-C, SIGTERM or a crash; a run killed outright is undone by the
 * next one). Before the mutants, the same test files run once on the unchanged code and must
 * pass, so a test that fails anyway kills nothing, and the test that killed a mutant runs once
 * more on it, alone, so a timing test failing under load kills nothing either. Exits 1 if a mutant
 * survives, a `find` text is not there exactly once, or a run could not tell (no test ran, a file
 * failed to load, a hang, a kill that did not reproduce).
 *
 *   npm run mutants                              every mutant
 *   npm run mutants -- --only id,id              some of them
 *   npm run mutants -- --check                   only check the list: every find once, docs in sync
 *   npm run mutants -- --write-docs              regenerate docs/maintainers/mutants*.md
 *
 * Not in CI: a run takes minutes (see docs/maintainers/mutants.md). `--check` is fast and runs in
 * the suite (test/mutants-list.test.ts).
 */

import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const LIST = join(root, 'scripts/mutants.json');
/** Where the original text of a mutated file waits until it is restored (gitignored). */
const PENDING = join(root, '.work/mutants-pending.json');
/** The longest one mutant's tests may run before the mutant counts as a hang. */
const TIMEOUT_MS = 5 * 60_000;

/**
 * @typedef {object} Mutant
 * @property {string} id
 * @property {string} file
 * @property {string} find
 * @property {string} replace
 * @property {string[]} tests
 * @property {string} bug
 * @property {string} [note]
 */

/** @returns {Mutant[]} */
export function readMutants() {
  const { mutants } = JSON.parse(readFileSync(LIST, 'utf8'));
  const ids = new Set();
  for (const mutant of mutants) {
    for (const field of ['id', 'file', 'find', 'bug']) {
      if (typeof mutant[field] !== 'string' || mutant[field] === '') {
        throw new Error(
          `scripts/mutants.json: a mutant without ${field}: ${JSON.stringify(mutant)}`,
        );
      }
    }
    if (typeof mutant.replace !== 'string' || mutant.replace === mutant.find) {
      throw new Error(`scripts/mutants.json: ${mutant.id} changes nothing`);
    }
    if (!Array.isArray(mutant.tests) || mutant.tests.length === 0) {
      throw new Error(`scripts/mutants.json: ${mutant.id} names no test file`);
    }
    if (ids.has(mutant.id)) throw new Error(`scripts/mutants.json: ${mutant.id} twice`);
    ids.add(mutant.id);
  }
  return mutants;
}

/** How many times the mutant's `find` text occurs in its file (it must be 1). */
export function occurrences(mutant) {
  const path = join(root, mutant.file);
  if (!existsSync(path)) return 0;
  return readFileSync(path, 'utf8').split(mutant.find).length - 1;
}

/**
 * The pages the list is written to, each a part of the code: a mutant goes to the first whose
 * prefix its file starts with. One page a part keeps each under the docs' 400 lines.
 */
const PARTS = [
  {
    page: 'mutants-stores.md',
    title: 'Stores, keys and claims',
    prefixes: ['src/stores/', 'src/keys/'],
  },
  {
    page: 'mutants-reconcile.md',
    title: 'Reconciliation, inboxes and the API client',
    prefixes: ['src/reconcile/', 'src/inbox/', 'src/api/'],
  },
  { page: 'mutants-receiving.md', title: 'Receiving a delivery', prefixes: [''] },
];

/** The part of the code a mutant's file belongs to. */
function partOf(mutant) {
  return PARTS.find((part) => part.prefixes.some((prefix) => mutant.file.startsWith(prefix)));
}

const GENERATED =
  '<!-- Generated from scripts/mutants.json by `npm run mutants -- --write-docs`: edit the JSON. -->';

/** The index page, docs/maintainers/mutants.md, and one page a part, as generated from the list. */
export function renderDocs(mutants) {
  const pages = new Map();
  const lines = [
    '# Hand-written mutants',
    '',
    GENERATED,
    '',
    'Realistic bugs that [StrykerJS](mutation-testing.md) cannot plant: an operator swapped for one',
    'of another family (`!==` for `<`), a call replaced by another (`timingSafeEqual` by',
    '`Buffer.compare`), an SQL fragment or a Lua line changed, a row of the outcome table given',
    'another status. Each names the bug it stands for and the test files that must fail with it.',
    '',
    '```sh',
    'npm run mutants                      # every mutant: apply, run its tests, expect a failure, restore',
    'npm run mutants -- --only a,b        # some of them',
    'npm run mutants -- --check           # only check the list (also part of npm test)',
    'npm run mutants -- --write-docs      # regenerate these pages after editing scripts/mutants.json',
    '```',
    '',
    'A mutant is one exact-text replacement in one file; the script refuses to run one whose `find`',
    'text is not in its file exactly once (the file changed: update the list). It runs the named',
    'test files once on the unchanged code first (they must pass), then for each mutant expects at',
    'least one of them to fail, and always restores the file. A kill must reproduce: the test',
    'that failed runs once more, alone, on the same mutant (a timing test failing under load is',
    'reported `not reproduced`). It is not part of CI: a full run takes about ten minutes. Run it',
    'before a release and after changing any file listed here.',
    '',
    '## Adding one',
    '',
    'Write the bug as it would really be written, not a random edit: a plausible slip of a',
    'maintainer or a reviewer who did not know the rule. Add it to `scripts/mutants.json` with the',
    'test files that must catch it, run `npm run mutants -- --only <id>`, and if it survives, write',
    "the test, against the platform's rules (docs/platform.md), not the code's own table.",
    '',
    `## The list (${mutants.length})`,
    '',
  ];
  for (const part of PARTS) {
    const mine = mutants.filter((mutant) => partOf(mutant) === part);
    lines.push(`- [${part.title}](${part.page}): ${mine.length}`);
    pages.set(`docs/maintainers/${part.page}`, renderPart(part, mine));
  }
  pages.set('docs/maintainers/mutants.md', `${lines.join('\n')}\n`);
  return pages;
}

/** One part's page: a paragraph and a diff a mutant. */
function renderPart(part, mutants) {
  const fence = (text) => (text.includes('```') ? '~~~' : '```');
  const lines = [
    `# Hand-written mutants: ${part.title.toLowerCase()}`,
    '',
    GENERATED,
    '',
    `${mutants.length} of the [hand-written mutants](mutants.md).`,
    '',
  ];
  for (const m of mutants) {
    const f = fence(m.find + m.replace);
    const tests = m.tests.map((t) => `\`${t}\``).join(', ');
    // One paragraph a mutant, its id first: the list stays readable at 40 mutants and more.
    // The diff follows its paragraph at once (a fence ends a paragraph): six lines a mutant.
    lines.push(
      `**${m.id}**: ${m.bug} In \`${m.file}\`; must fail: ${tests}.${m.note ? ` ${m.note}` : ''}`,
    );
    lines.push(`${f}diff`);
    for (const line of m.find.split('\n')) lines.push(`- ${line}`.trimEnd());
    if (m.replace === '') lines.push('+');
    else for (const line of m.replace.split('\n')) lines.push(`+ ${line}`.trimEnd());
    lines.push(f, '');
  }
  return `${lines.join('\n').trimEnd()}\n`;
}

/** Problems of the list as it stands: find texts not there exactly once, docs out of date. */
export function checkList(mutants = readMutants()) {
  const problems = [];
  for (const m of mutants) {
    const count = occurrences(m);
    if (count !== 1) {
      problems.push(`${m.id}: the find text occurs ${count} times in ${m.file} (must be once)`);
    }
    for (const test of m.tests) {
      if (!existsSync(join(root, test))) problems.push(`${m.id}: no test file ${test}`);
    }
  }
  for (const [page, text] of renderDocs(mutants)) {
    const path = join(root, page);
    if ((existsSync(path) ? readFileSync(path, 'utf8') : '') !== text) {
      problems.push(
        `${page} is not generated from scripts/mutants.json: run npm run mutants -- --write-docs`,
      );
    }
  }
  return problems;
}

// --- Restoring, whatever happens ---------------------------------------------------------------

/** @type {{ file: string, text: string } | undefined} */
let mutated;
/** @type {import('node:child_process').ChildProcess | undefined} */
let child;

function restore() {
  if (mutated) {
    writeFileSync(join(root, mutated.file), mutated.text);
    mutated = undefined;
  }
  rmSync(PENDING, { force: true });
}

/** A run killed outright (SIGKILL, a power cut) left a file mutated: put it back first. */
function restoreLeftover() {
  if (!existsSync(PENDING)) return;
  const { file, text } = JSON.parse(readFileSync(PENDING, 'utf8'));
  writeFileSync(join(root, file), text);
  rmSync(PENDING, { force: true });
  console.error(`Restored ${file}, left mutated by a run that was killed.`);
}

function apply(mutant) {
  const path = join(root, mutant.file);
  const text = readFileSync(path, 'utf8');
  mkdirSync(dirname(PENDING), { recursive: true });
  writeFileSync(PENDING, JSON.stringify({ file: mutant.file, text }));
  mutated = { file: mutant.file, text };
  writeFileSync(
    path,
    text.replace(mutant.find, () => mutant.replace),
  );
}

function onSignal(signal) {
  if (child?.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
  restore();
  console.error(`\nStopped by ${signal}; every file is restored.`);
  process.exit(signal === 'SIGINT' ? 130 : 143);
}

// --- Running the tests ---------------------------------------------------------------------------

/**
 * Run test files with vitest; what the JSON report says.
 * @returns {Promise<{ total: number, failed: number, failedSuites: number, timedOut: boolean, output: string, firstFailure: string, firstFailed?: { file: string, name: string } }>}
 */
function escapeRegExp(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

function runTests(files, testName) {
  const report = join(tmpdir(), `schoolhooks-mutants-${process.pid}.json`);
  rmSync(report, { force: true });
  const vitest = join(root, 'node_modules/.bin/vitest');
  const args = [
    'run',
    ...files,
    '--reporter=json',
    `--outputFile.json=${report}`,
    '--bail=1',
    '--typecheck.enabled=false',
    '--coverage.enabled=false',
    ...(testName === undefined ? [] : ['--testNamePattern', escapeRegExp(testName)]),
  ];
  return new Promise((done) => {
    let output = '';
    child = spawn(vitest, args, {
      cwd: root,
      detached: true,
      env: { ...process.env, CI: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const keep = (chunk) => (output = (output + chunk).slice(-4000));
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, TIMEOUT_MS);
    child.on('close', () => {
      clearTimeout(timer);
      child = undefined;
      let total = 0;
      let failed = 0;
      let failedSuites = 0;
      let firstFailure = '';
      let firstFailed;
      if (existsSync(report)) {
        const json = JSON.parse(readFileSync(report, 'utf8'));
        total = json.numTotalTests ?? 0;
        failed = json.numFailedTests ?? 0;
        // A file that failed to load has no failed test, only a failed suite.
        failedSuites = (json.testResults ?? []).filter(
          (r) => r.status === 'failed' && (r.assertionResults ?? []).length === 0,
        ).length;
        const failure = (json.testResults ?? [])
          .flatMap((r) => (r.assertionResults ?? []).map((a) => ({ ...a, file: r.name })))
          .find((a) => a.status === 'failed');
        if (failure) {
          const file = failure.file.slice(root.length + 1);
          const name = failure.fullName ?? failure.title;
          firstFailure = `${file}: ${name}`;
          firstFailed = { file, name };
        }
        rmSync(report, { force: true });
      }
      done({ total, failed, failedSuites, timedOut, output, firstFailure, firstFailed });
    });
  });
}

/** A mutant's result: `killed` is the only good one. */
function verdict({ total, failed, failedSuites, timedOut }) {
  if (timedOut) return 'timeout';
  if (failedSuites > 0 && failed === 0) return 'load error';
  if (failed > 0) return 'killed';
  if (total === 0) return 'no tests';
  return 'SURVIVED';
}

function table(rows) {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => String(row[i]).length)));
  return rows
    .map((row) => row.map((cell, i) => String(cell).padEnd(widths[i])).join('  '))
    .join('\n');
}

async function main(argv) {
  if (argv.includes('--write-docs')) {
    for (const [page, text] of renderDocs(readMutants())) {
      mkdirSync(dirname(join(root, page)), { recursive: true });
      writeFileSync(join(root, page), text);
      console.log(`Wrote ${page}`);
    }
    return 0;
  }
  const all = readMutants();
  if (argv.includes('--check')) {
    // Reads only: a run of the mutants may be going on beside it.
    const problems = checkList(all);
    for (const problem of problems) console.error(problem);
    if (problems.length === 0)
      console.log(`${all.length} mutants: every find text once, docs in sync.`);
    return problems.length === 0 ? 0 : 1;
  }
  restoreLeftover();
  const at = argv.indexOf('--only');
  const only = at === -1 ? undefined : new Set(argv[at + 1]?.split(',') ?? []);
  const mutants = only ? all.filter((m) => only.has(m.id)) : all;
  if (only && mutants.length !== only.size) {
    console.error(
      `No such mutant: ${[...only].filter((id) => !all.some((m) => m.id === id)).join(', ')}`,
    );
    return 1;
  }

  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => onSignal(signal));
  process.on('exit', restore);
  process.on('uncaughtException', (error) => {
    restore();
    console.error(error);
    process.exit(1);
  });

  const startedAt = Date.now();
  const missing = mutants.filter((m) => occurrences(m) !== 1);
  const runnable = mutants.filter((m) => !missing.includes(m));

  const files = [...new Set(runnable.flatMap((m) => m.tests))];
  if (!argv.includes('--no-baseline') && files.length > 0) {
    process.stdout.write(`Baseline: ${files.length} test files on the unchanged code… `);
    const baseline = await runTests(files);
    if (
      baseline.failed > 0 ||
      baseline.failedSuites > 0 ||
      baseline.timedOut ||
      baseline.total === 0
    ) {
      console.log('FAILED');
      console.error(baseline.output);
      console.error('The tests must pass on the unchanged code before a mutant can be judged.');
      return 1;
    }
    console.log(
      `${baseline.total} tests pass (${((Date.now() - startedAt) / 1000).toFixed(0)} s).`,
    );
  }

  // The test that failed first is shown: a timing test failing under load, not for the bug,
  // shows up there (the baseline only proves the tests pass once).
  const rows = [['mutant', 'file', 'result', 'seconds', 'first failing test']];
  for (const m of missing) rows.push([m.id, m.file, `find text ×${occurrences(m)}`, '-', '']);
  let bad = missing.length;
  for (const [i, m] of runnable.entries()) {
    process.stdout.write(`[${i + 1}/${runnable.length}] ${m.id}… `);
    const t0 = Date.now();
    let result;
    try {
      apply(m);
      result = await runTests(m.tests);
      // A kill must reproduce: the test that failed runs once more, alone, on the same mutant.
      // A timing test failing under load (a 60 ms lease outlived) fails for the load, not the bug.
      if (verdict(result) === 'killed' && result.firstFailed) {
        const again = await runTests([result.firstFailed.file], result.firstFailed.name);
        if (again.failed === 0) result = { ...result, flaky: true };
      }
    } finally {
      restore();
    }
    const outcome = result.flaky ? 'not reproduced' : verdict(result);
    const seconds = ((Date.now() - t0) / 1000).toFixed(1);
    console.log(`${outcome} (${seconds} s)`);
    if (outcome !== 'killed') {
      bad++;
      if (outcome !== 'SURVIVED') console.error(result.output);
    }
    rows.push([m.id, m.file, outcome, seconds, result.firstFailure.slice(0, 110)]);
  }
  console.log(`\n${table(rows)}\n`);
  const killed = rows.filter((row) => row[2] === 'killed').length;
  console.log(
    `${killed} of ${mutants.length} killed in ${((Date.now() - startedAt) / 1000).toFixed(0)} s` +
      (bad > 0 ? `; ${bad} not killed (survived, missing or undecided).` : '.'),
  );
  return bad === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  process.exitCode = await main(process.argv.slice(2));
}
