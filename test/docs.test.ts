/**
 * Citations stay true: every `docs/platform.md#…` (or `platform.md#…`) anchor cited anywhere in
 * the repository is a heading of that page, and the README's contents link to its own headings.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replaceAll(' ', '-');
}

/** The anchors of a Markdown file's headings, code blocks left out. */
function anchors(file: string): Set<string> {
  let fenced = false;
  const found = new Set<string>();
  for (const line of readFileSync(join(root, file), 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = /^#{1,6} (.+)$/.exec(line);
    if (!fenced && heading) found.add(anchorOf(heading[1]!));
  }
  return found;
}

/** Every text file of the repository that may cite a document, repo-relative. */
function citingFiles(): string[] {
  const dirs = ['src', 'adapters', 'test', 'bench', 'scripts', 'examples', 'docs'];
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

describe('the README', () => {
  it('links its contents to headings it has', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const contents = readme.slice(readme.indexOf('**Contents**'), readme.indexOf('## Quick start'));
    const links = [...contents.matchAll(/\]\(#([a-z0-9-]+)\)/g)].map((match) => match[1]!);
    expect(links.length).toBeGreaterThan(8);
    const headings = anchors('README.md');
    expect(links.filter((link) => !headings.has(link))).toEqual([]);
  });
});
