/**
 * Every adapter package.json exports comes whole: built from its source, run through the shared
 * adapter suite over real sockets, type-tested, shown by a runnable example and documented on a
 * page of its own. The list is package.json's (scripts/entries.mjs reads it), so an adapter added
 * there and missing one of these fails here, by name.
 */

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ADAPTERS, sourceOf } from '../../scripts/entries.mjs';

const root = join(import.meta.dirname, '..', '..');

/** The functions a file calls by name, read with the TypeScript parser (comments do not count). */
function calledIn(path: string): Set<string> {
  const file = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.Latest, true);
  const called = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isIdentifier(node.expression)) {
      called.add(node.expression.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return called;
}

/**
 * The lines of a file that hold code: not blank, and not a comment's (a line that starts with
 * `//`, `/*` or, inside a doc comment, `*`).
 */
function codeLines(path: string): number {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s*(?:\/\/|\/\*|\*)/.test(line)).length;
}

/** An adapter is a few dozen lines of its framework's reads and write; the rules are the core's. */
const MAX_ADAPTER_CODE_LINES = 200;

/** Where an adapter's runnable example may be. */
const examplesOf = (name: string) => [`examples/${name}.js`, `examples/${name}.ts`];

it('finds the adapters in package.json exports', () => {
  expect(ADAPTERS.length).toBeGreaterThan(0);
  for (const name of ADAPTERS) expect(name).toMatch(/^[a-z][a-z0-9-]*$/);
});

describe.each(ADAPTERS)('schoolhooks/%s', (name) => {
  const testFile = join(root, 'test', 'adapters', `${name}.test.ts`);

  it('is built from its source', () => {
    expect(existsSync(join(root, sourceOf(name))), sourceOf(name)).toBe(true);
  });

  it(`runs the shared adapter suite (adapterSuite in test/adapters/${name}.test.ts)`, () => {
    expect(existsSync(testFile), `test/adapters/${name}.test.ts`).toBe(true);
    expect(calledIn(testFile)).toContain('adapterSuite');
  });

  it(`has a type test (expectTypeOf in test/adapters/${name}.test.ts)`, () => {
    // vitest.config.ts type-checks the adapters' test files as it does *.test-d.ts.
    expect(existsSync(testFile), `test/adapters/${name}.test.ts`).toBe(true);
    expect(calledIn(testFile)).toContain('expectTypeOf');
  });

  it('has a runnable example under examples/', () => {
    // test/examples/frameworks.test.ts runs each one.
    const found = examplesOf(name).filter((path) => existsSync(join(root, path)));
    expect(found, examplesOf(name).join(' or ')).toHaveLength(1);
  });

  it(`has a docs page, docs/frameworks/${name}.md`, () => {
    expect(existsSync(join(root, 'docs', 'frameworks', `${name}.md`))).toBe(true);
  });

  it(`holds at most ${MAX_ADAPTER_CODE_LINES} lines of code`, () => {
    expect(codeLines(join(root, sourceOf(name)))).toBeLessThanOrEqual(MAX_ADAPTER_CODE_LINES);
  });
});

it('counts code lines, not comments or blank lines', () => {
  const dir = mkdtempSync(join(tmpdir(), 'code-lines-'));
  const path = join(dir, 'sample.ts');
  writeFileSync(
    path,
    "/**\n * doc\n */\n\n// note\nconst a = '// not a comment';\nfunction f() {\n  return a; // why\n}\n",
  );
  expect(codeLines(path)).toBe(4);
  rmSync(dir, { recursive: true });
});
