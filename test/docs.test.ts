/**
 * The docs stay true and short: every relative link and anchor of README.md and docs/ resolves,
 * every `docs/platform.md#…` anchor cited anywhere in the repository is a heading of that page,
 * the README is a ten-minute read with its receiver near the top, and the tables that restate the
 * code (outcomes and statuses, `createReceiver`'s and `createReconciler`'s options and defaults,
 * the event names, the CLI's help) say what the code does. (Every code block is type-checked by
 * docs-snippets.test.ts.)
 */

import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../src/cli/main.js';
import { FIXED_CONTRACT_EVENTS, KNOWN_EVENTS } from '../src/platform/events/index.js';
import { OUTCOMES } from '../src/receiving/outcome.js';
import { createReceiver, memoryStore } from '../src/index.js';
import { checkOptions } from '../src/internal.js';
import { checkReconcilerOptions } from '../src/reconcile/settings.js';
import type { ReconcileApi } from '../src/reconcile/types.js';
import {
  anchors,
  codeBlocks,
  markdownPages,
  prose,
  readPage,
  ROOT,
  SOURCE_OF_IMPORT,
  userPages,
} from './helpers/markdown.js';
import packageJson from '../package.json' with { type: 'json' };
import typedoc from '../typedoc.json' with { type: 'json' };

const root = ROOT;

/** Every text file of the repository that may cite a document, repo-relative. */
function citingFiles(): string[] {
  const dirs = ['src', 'test', 'bench', 'scripts', 'examples', 'docs'];
  return [
    'README.md',
    'SECURITY.md',
    ...dirs.flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).map((file) =>
        relative(root, join(root, dir, file))
          .split('\\')
          .join('/'),
      ),
    ),
  ].filter((file) => /\.(ts|mjs|js|md)$/.test(file) && !file.includes('/assets/'));
}

/** The rows of the first Markdown table after `heading` on a page, cells trimmed, header left out. */
function tableAfter(file: string, heading: string): string[][] {
  const lines = readPage(file).split('\n');
  const start = lines.indexOf(heading);
  expect(start, `${file} has the heading ${heading}`).toBeGreaterThan(-1);
  const first = lines.findIndex((line, index) => index > start && line.startsWith('|'));
  const rows: string[][] = [];
  for (let index = first + 2; lines[index]?.startsWith('|'); index++) {
    const cells = lines[index]!.replaceAll('\\|', '\u0000')
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.replaceAll('\u0000', '|').trim());
    rows.push(cells);
  }
  return rows;
}

/** The text inside the first pair of backticks of a cell. */
function code(cell: string): string {
  return /`([^`]+)`/.exec(cell)?.[1] ?? cell;
}

/** The table under `## Options` of a page: each option's default cell, by the option's name. */
function optionRows(file: string): Map<string, string> {
  return new Map(
    tableAfter(file, '## Options').map(([name, fallback]) => [code(name!), fallback!]),
  );
}

/** The fields `interfaceName` declares in `file`, in their order: what an options table lists. */
function declaredFields(file: string, interfaceName: string): string[] {
  const source = readFileSync(join(root, file), 'utf8');
  const body = source.slice(source.indexOf(`export interface ${interfaceName} {`));
  return [...body.slice(0, body.indexOf('\n}')).matchAll(/^ {2}(\w+)\??:/gm)].map(
    (match) => match[1]!,
  );
}

/** The number a default cell names: `1000`, `(300000)`, or an amount of a unit (`5 h`, `1 MiB`). */
function amountOf(cell: string): number {
  const exact = /\(([\d ]+)\)/.exec(cell) ?? /^([\d ]+)$/.exec(cell);
  if (exact) return Number(exact[1]!.replaceAll(' ', ''));
  const units: Record<string, number> = { MiB: 1, h: 3_600_000, days: 86_400_000, s: 1_000 };
  const [, amount, unit] = /^([\d.]+) (\w+)$/.exec(cell)!;
  return Number(amount) * units[unit!]!;
}

describe('docs/platform.md', () => {
  const headings = anchors('docs/platform.md');

  it('has a heading for every anchor cited anywhere in the repository', () => {
    const cited = citingFiles().flatMap((file) =>
      [
        ...readFileSync(join(root, file), 'utf8').matchAll(
          /platform\.md#([a-z0-9-]+)((?:,? (?:and )?#[a-z0-9-]+)*)/g,
        ),
      ].flatMap((match) => [
        { file, anchor: match[1]! },
        ...[...(match[2] ?? '').matchAll(/#([a-z0-9-]+)/g)].map((more) => ({
          file,
          anchor: more[1]!,
        })),
      ]),
    );
    expect(cited.length).toBeGreaterThan(20);
    expect(cited.filter(({ anchor }) => !headings.has(anchor))).toEqual([]);
  });
});

describe('links', () => {
  it('every relative link and anchor of README.md, SECURITY.md and docs/ resolves', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of markdownPages()) {
      for (const match of prose(file).matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1]!;
        if (/^[a-z]+:/.test(target)) continue; // https:, mailto:
        checked++;
        const [path = '', anchor] = target.split('#');
        const resolved = path === '' ? file : normalize(join(dirname(file), path));
        const absolute = join(root, resolved);
        if (!existsSync(absolute)) {
          broken.push(`${file}: ${target} (no ${resolved})`);
        } else if (anchor !== undefined) {
          const found = statSync(absolute).isFile() && resolved.endsWith('.md');
          if (!found || !anchors(resolved).has(anchor))
            broken.push(`${file}: ${target} (no heading #${anchor} in ${resolved})`);
        }
      }
    }
    expect(checked).toBeGreaterThan(100);
    expect(broken).toEqual([]);
  });
});

describe('sizes', () => {
  const readme = readPage('README.md').split('\n');

  it('the README is at most 250 lines, its first code block within its first 60', () => {
    expect(readme.length).toBeLessThanOrEqual(250);
    expect(readme.findIndex((line) => line.startsWith('```')) + 1).toBeLessThanOrEqual(60);
  });

  it("the README's first receiver is about 15 lines and registers onError once", () => {
    const receiver = codeBlocks('README.md').find((block) => block.lang === 'ts')!;
    expect(receiver.body.split('\n').length - 1).toBeLessThanOrEqual(20);
    expect(receiver.body).toContain('createReceiver(');
    expect(receiver.body.match(/\.onError\(/g)).toHaveLength(1);
  });

  it('no file under docs/ is over 400 lines', () => {
    const long = markdownPages()
      .filter((file) => file.startsWith('docs/'))
      .map((file) => [file, readPage(file).split('\n').length] as const)
      .filter(([, lines]) => lines > 400);
    expect(long).toEqual([]);
  });

  it('has one page per framework', () => {
    const pages = readdirSync(join(root, 'docs/frameworks')).sort();
    expect(pages).toEqual(
      ['express', 'fastify', 'fetch', 'hono', 'koa', 'lambda', 'nestjs', 'node', 'other'].map(
        (name) => `${name}.md`,
      ),
    );
  });

  it('no code block registers onError twice: every failure would be printed twice', () => {
    const twice = userPages()
      .flatMap(codeBlocks)
      .filter((block) => (block.body.match(/\.onError\(/g) ?? []).length > 1)
      .map((block) => `${block.file}:${block.line}`);
    expect(twice).toEqual([]);
  });
});

describe('tables that restate the code', () => {
  it('the status table names every outcome, in the order of the pipeline, with its status', () => {
    const rows = tableAfter('docs/receiving.md', '## What each delivery is answered').map(
      ([, , status, outcome]) => [code(outcome!), Number(status)] as const,
    );
    expect(
      rows.filter(
        ([outcome, status]) => OUTCOMES[outcome as keyof typeof OUTCOMES]?.status !== status,
      ),
    ).toEqual([]);
    expect([...new Set(rows.map(([outcome]) => outcome))]).toEqual(Object.keys(OUTCOMES));
  });

  it("createReceiver's options are the table's, with the defaults it names", () => {
    const rows = optionRows('docs/receiving.md');
    expect([...rows.keys()]).toEqual(
      declaredFields('src/receiving/receiver-settings.ts', 'ReceiverOptions'),
    );

    const settings = checkOptions({ secret: 'a'.repeat(64) });
    expect(
      (['maxBodyBytes', 'maxEventAgeMs', 'dedupTtlMs', 'leaseMs', 'handlerTimeoutMs'] as const).map(
        (name) => [name, amountOf(rows.get(name)!)],
      ),
    ).toEqual(
      (['maxBodyBytes', 'maxEventAgeMs', 'dedupTtlMs', 'leaseMs', 'handlerTimeoutMs'] as const).map(
        (name) => [name, settings[name]],
      ),
    );
    expect(rows.get('secret')).toBe('(required)');
    expect(rows.get('now')).toBe('`Date.now`');
    expect(settings.now).toBe(Date.now);
    for (const name of ['telemetry', 'inbox'] as const) {
      expect(rows.get(name)).toBe('none');
      expect(settings[name]).toBeUndefined();
    }
    expect(settings.schemas).toBeUndefined();
    // Records are on unless turned off: a reconciler relies on them from the first delivery.
    expect(rows.get('recordEntities')).toBe('`true`');
    expect(settings.recordTtlMs).toBeGreaterThan(0);
    expect(settings.store.constructor.name).toBe(
      checkOptions({ secret: 'b'.repeat(64) }).store.constructor.name,
    );
  });

  it("createReconciler's options are the table's, with the defaults it names", () => {
    const rows = optionRows('docs/reconcile.md');
    expect([...rows.keys()]).toEqual(declaredFields('src/reconcile/types.ts', 'ReconcilerOptions'));

    const api = { invoices() {}, productAccesses() {}, certificates() {}, users() {} };
    const store = memoryStore();
    const settings = checkReconcilerOptions({ api: api as unknown as ReconcileApi, store });
    const amounts = [
      'minAgeMs',
      'lookbackMs',
      'handlerTimeoutMs',
      'inFlightWaitMs',
      'take',
    ] as const;
    expect(amounts.map((name) => [name, amountOf(rows.get(name)!)])).toEqual(
      amounts.map((name) => [name, settings[name]]),
    );
    expect([rows.get('api'), rows.get('now'), settings.now]).toEqual([
      '(required)',
      '`Date.now`',
      Date.now,
    ]);
    expect([rows.get('tenant'), settings.tenant]).toEqual(['none', undefined]);
    const receiver = createReceiver({ secret: 'a'.repeat(64), store });
    expect(checkReconcilerOptions({ api: api as unknown as ReconcileApi, receiver }).store).toBe(
      store,
    );
    expect(rows.get('store')).toBe("the `receiver`'s");
  });

  it('the event names are the ones the receiver knows, with the ones it validates marked', () => {
    const rows = tableAfter('docs/events.md', '## Event names');
    expect(rows.map(([name]) => code(name!))).toEqual([...KNOWN_EVENTS]);
    const validated = rows
      .filter(([, data]) => data!.startsWith('validated'))
      .map(([name]) => code(name!));
    expect(validated).toEqual([...FIXED_CONTRACT_EVENTS]);
  });

  it('every `--help` shown on the pages is what the CLI prints', async () => {
    const shown = userPages()
      .flatMap(codeBlocks)
      .filter((block) => /^\$ schoolhooks( \w+)? --help\n/.test(block.body));
    expect(shown.length).toBeGreaterThanOrEqual(9);
    for (const block of shown) {
      const [command, ...printed] = block.body.split('\n');
      const args = command!.split(' ').slice(2);
      let stdout = '';
      const code = await main(args, {
        out: (text) => (stdout += `${text}\n`),
        err: () => {},
        readStdin: async () => new Uint8Array(),
        stdinIsTty: true,
        env: {},
        untilStopped: () => new Promise(() => {}),
      });
      expect(code).toBe(0);
      expect(`${block.file}: ${command}\n${printed.join('\n')}`).toBe(
        `${block.file}: ${command}\n${stdout.replace(/\n+$/, '\n')}`,
      );
    }
  });
});

describe('the API reference (npm run docs)', () => {
  it('covers every entry point of package.json', () => {
    const imports = Object.keys(packageJson.exports)
      .filter((subpath) => subpath !== './package.json')
      .map((subpath) => `schoolhooks${subpath.slice(1)}`);
    expect(Object.keys(SOURCE_OF_IMPORT).sort()).toEqual(imports.sort());
    expect([...typedoc.entryPoints].sort()).toEqual(Object.values(SOURCE_OF_IMPORT).sort());
  });

  it('fails on any warning, and on any export without a doc comment', () => {
    expect(typedoc.treatWarningsAsErrors).toBe(true);
    expect(typedoc.validation.notDocumented).toBe(true);
  });
});
