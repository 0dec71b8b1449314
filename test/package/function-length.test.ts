/**
 * No function in src/ is over 80 lines (docs/maintainers/architecture.md): a reader sees each one
 * whole. Counted from the function's first line to its last, nested functions included, so a
 * factory that returns an object of methods counts them all. The generated validators are
 * exempt: no one reads or edits them (`npm run generate` writes them).
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..');
const MAX_LINES = 80;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.generated.ts') ? [path] : [];
  });
}

/** Each function of `file` longer than `max` lines, as `file:line name (n lines)`. */
function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) {
        const named = ts.isVariableDeclaration(node.parent) ? node.parent : node;
        const name = named.name?.getText(source) ?? '(anonymous)';
        found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('function length', () => {
  it(`finds no function over ${MAX_LINES} lines in src/`, () => {
    const found = sourceFiles(join(root, 'src')).flatMap((path) =>
      longFunctions(relative(root, path), readFileSync(path, 'utf8'), MAX_LINES),
    );
    expect(found).toEqual([]);
  });

  it('sees a long function, nested or not, and only a long one', () => {
    const body = (n: number) =>
      Array.from({ length: n }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = [
      `export function long() {\n${body(79)}\n}`,
      `export function fits() {\n${body(78)}\n}`,
      `export const outer = () => ({ inner() {\n${body(81)}\n} });`,
    ].join('\n');
    expect(longFunctions('x.ts', text, MAX_LINES)).toEqual([
      'x.ts:1 long (81 lines)',
      'x.ts:162 outer (83 lines)',
      'x.ts:162 inner (83 lines)',
    ]);
  });
});
