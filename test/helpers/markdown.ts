/**
 * The repository's Markdown as the docs tests read it: the pages (README.md and docs/**), their
 * fenced code blocks, headings and links, and where each `schoolhooks` subpath's source is.
 * @module
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository's root. */
export const ROOT = join(import.meta.dirname, '../..');

/** One fenced code block of a page. */
export interface CodeBlock {
  /** The page, repo-relative. */
  readonly file: string;
  /** The line of its opening fence, 1-based. */
  readonly line: number;
  /** The word after the opening fence (`ts`, `sh`, `text`…), or '' without one. */
  readonly lang: string;
  /** Its text, every line ending in a newline. */
  readonly body: string;
}

/** README.md, SECURITY.md and every Markdown file under docs/, repo-relative, sorted. */
export function markdownPages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'), { recursive: true, encoding: 'utf8' })
    .map((file) => `docs/${file.split('\\').join('/')}`)
    .filter((file) => file.endsWith('.md'));
  return ['README.md', 'SECURITY.md', ...docs.sort()];
}

/** The user's pages: README.md and docs/ but docs/maintainers/, whose code blocks are logs. */
export function userPages(): string[] {
  return markdownPages().filter(
    (file) => file !== 'SECURITY.md' && !file.startsWith('docs/maintainers/'),
  );
}

/** A page's text. */
export function readPage(file: string): string {
  return readFileSync(join(ROOT, file), 'utf8');
}

/** Every fenced code block of a page, in order; one indented in a list item loses its indent. */
export function codeBlocks(file: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: { line: number; lang: string; indent: string; lines: string[] } | undefined;
  readPage(file)
    .split('\n')
    .forEach((text, index) => {
      if (open === undefined) {
        const fence = /^( *)```(\w*)\s*$/.exec(text);
        if (fence) open = { line: index + 1, lang: fence[2]!, indent: fence[1]!, lines: [] };
      } else if (text === `${open.indent}\`\`\``) {
        blocks.push({ file, line: open.line, lang: open.lang, body: open.lines.join('') });
        open = undefined;
      } else {
        open.lines.push(
          `${text.startsWith(open.indent) ? text.slice(open.indent.length) : text}\n`,
        );
      }
    });
  return blocks;
}

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens. */
export function anchorOf(heading: string): string {
  return heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N} _-]/gu, '')
    .replaceAll(' ', '-');
}

/** The anchors of a Markdown file's headings, code blocks left out. */
export function anchors(file: string): Set<string> {
  let fenced = false;
  const found = new Set<string>();
  for (const line of readPage(file).split('\n')) {
    if (/^ *```/.test(line)) fenced = !fenced;
    const heading = /^#{1,6} (.+)$/.exec(line);
    if (!fenced && heading) found.add(anchorOf(heading[1]!));
  }
  return found;
}

/** A page's text with its code blocks and inline code blanked, so links are read from prose only. */
export function prose(file: string): string {
  let fenced = false;
  return readPage(file)
    .split('\n')
    .map((line) => {
      if (/^ *```/.test(line)) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line.replace(/`[^`]*`/g, '``');
    })
    .join('\n');
}

/**
 * The source file behind each import path of the package: `schoolhooks` and every subpath of
 * package.json's `exports` (tsup.config.ts builds the same files).
 */
export const SOURCE_OF_IMPORT: Readonly<Record<string, string>> = {
  schoolhooks: 'src/index.ts',
  'schoolhooks/express': 'src/adapters/express.ts',
  'schoolhooks/hono': 'src/adapters/hono.ts',
  'schoolhooks/node': 'src/adapters/node.ts',
  'schoolhooks/fetch': 'src/adapters/fetch.ts',
  'schoolhooks/fastify': 'src/adapters/fastify.ts',
  'schoolhooks/koa': 'src/adapters/koa.ts',
  'schoolhooks/nestjs': 'src/adapters/nestjs.ts',
  'schoolhooks/lambda': 'src/adapters/lambda.ts',
  'schoolhooks/redis': 'src/stores/redis.ts',
  'schoolhooks/postgres': 'src/postgres.ts',
  'schoolhooks/otel': 'src/telemetry/otel/index.ts',
  'schoolhooks/bullmq': 'src/inbox/bullmq.ts',
  'schoolhooks/api': 'src/api/index.ts',
  'schoolhooks/reconcile': 'src/reconcile/index.ts',
  'schoolhooks/watchdog': 'src/watchdog/index.ts',
  'schoolhooks/links': 'src/links/index.ts',
  'schoolhooks/testing': 'src/testing/index.ts',
};
