/**
 * Every code block of README.md and docs/ (docs/maintainers/ aside) is checked against the code:
 *
 * - `ts` blocks are type-checked, each as a module of its own, with `schoolhooks` and its
 *   subpaths resolved to the sources and the strict options a user's project has. A block may
 *   use the few names of the user's own app that USER_APP below declares (`grantAccess`,
 *   `receiver` in a fragment that continues one above…); anything else must be imported.
 * - `js` blocks must parse (the one there is, docs/postgres.md's stack on Postgres alone, is also
 *   run by test/examples/pg-boss.test.ts).
 * - `sh` blocks: every `schoolhooks` command they run exists and takes every option they pass,
 *   every `npm run` script exists, and every file of this repository they name is there.
 *
 * Blocks that are run as well: the README's `npm run demo` (demo.test.ts), the test file and the
 * curl recipe (readme.test.ts), the Postgres recipes (stores/postgres-readme.test.ts,
 * examples/pg-boss.test.ts); `--help` outputs are compared with the CLI by docs.test.ts.
 */

import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import packageJson from '../package.json' with { type: 'json' };
import { COMMANDS } from '../src/cli/main.js';
import {
  codeBlocks,
  readPage,
  ROOT,
  SOURCE_OF_IMPORT,
  userPages,
  type CodeBlock,
} from './helpers/markdown.js';

const blocks = userPages().flatMap(codeBlocks);

/**
 * What the user's own app has and a block may use without defining it. Names of schoolhooks
 * itself are never here: a block imports them, or is a fragment of one above that made them.
 */
const USER_APP = `
declare const receiver: import('schoolhooks').Receiver;
declare const secret: string;
declare function grantAccess(...args: unknown[]): Promise<void>;
declare const mailer: { send(mail: { to: string; subject: string; text: string }): Promise<void> };
declare const crm: { setLessonStatus(...args: unknown[]): Promise<void> };
declare const app: import('express').Express;
declare const server: import('node:http').Server;
declare const requireAdmin: import('express').RequestHandler;
declare const inbox: import('schoolhooks/bullmq').BullmqInbox;
declare function myStore(env: unknown): import('schoolhooks').IdempotencyStore;
declare const Bun: {
  serve(options: { port: number; fetch(request: Request): Promise<Response> }): unknown;
};
declare const Deno: {
  env: { get(name: string): string | undefined };
  serve(options: { port: number }, handler: (request: Request) => Promise<Response>): unknown;
};
declare module 'npm:schoolhooks' {
  export * from 'schoolhooks';
}
declare module 'npm:schoolhooks/fetch' {
  export * from 'schoolhooks/fetch';
}
declare module 'cloudflare:workers' {
  export const env: { readonly SCHOOL_WEBHOOK_SECRET: string };
}
// The OpenTelemetry Node SDK of docs/telemetry.md's recipe is not a dependency of this repository.
declare module '@opentelemetry/auto-instrumentations-node';
declare module '@opentelemetry/exporter-metrics-otlp-http';
declare module '@opentelemetry/exporter-trace-otlp-http';
declare module '@opentelemetry/sdk-node';
`;
const SNIPPETS = join(ROOT, '.docs-snippets');

/** A block's file name in the virtual project: its page and line, e.g. `docs-stores.md-L42.ts`. */
function fileOf(block: CodeBlock, extension: string): string {
  return join(SNIPPETS, `${block.file.replaceAll('/', '-')}-L${block.line}.${extension}`);
}

/** Type-checks files that exist only in memory; resolves to one line per diagnostic. */
function typeCheck(files: ReadonlyMap<string, string>): string[] {
  const options: ts.CompilerOptions = {
    target: ts.ScriptTarget.ES2022,
    lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    strict: true,
    experimentalDecorators: true,
    esModuleInterop: true,
    resolveJsonModule: true,
    skipLibCheck: true,
    noEmit: true,
    allowJs: true,
    checkJs: false,
    types: ['node'],
    baseUrl: ROOT,
    paths: Object.fromEntries(
      Object.entries(SOURCE_OF_IMPORT).map(([name, source]) => [name, [source]]),
    ),
  };
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (name) => files.has(name) || fileExists(name);
  host.readFile = (name) => files.get(name) ?? readFile(name);
  host.getSourceFile = (name, language, ...rest) => {
    const text = files.get(name);
    return text === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, text, language);
  };
  const program = ts.createProgram([...files.keys()], options, host);
  return ts
    .getPreEmitDiagnostics(program)
    .filter((diagnostic) => diagnostic.file === undefined || files.has(diagnostic.file.fileName))
    .map((diagnostic) => {
      const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
      if (diagnostic.file === undefined || diagnostic.start === undefined) return message;
      const { line } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
      const name = diagnostic.file.fileName.slice(SNIPPETS.length + 1);
      return `${name} (block line ${line + 1}): ${message}`;
    });
}

describe('the code blocks of README.md and docs/', () => {
  it('are many, and every one has a language', () => {
    expect(blocks.length).toBeGreaterThan(60);
    expect(blocks.filter((block) => block.lang === '').map((b) => `${b.file}:${b.line}`)).toEqual(
      [],
    );
  });

  it('type-check (ts) or parse (js), each as a module of its own', () => {
    const files = new Map<string, string>([[join(SNIPPETS, 'app.d.ts'), USER_APP]]);
    for (const block of blocks) {
      if (block.lang === 'ts' || block.lang === 'js')
        files.set(fileOf(block, block.lang), `${block.body}\nexport {};\n`);
    }
    expect(files.size).toBeGreaterThan(30);
    expect(typeCheck(files)).toEqual([]);
  }, 120_000);

  it('run only schoolhooks commands and options that exist, npm scripts there are, files that are there', () => {
    const commands = new Map(COMMANDS.map((command) => [command.name, command]));
    const scripts = Object.keys(packageJson.scripts);
    const wrong: string[] = [];
    for (const block of blocks.filter((b) => b.lang === 'sh')) {
      const lines = block.body.replaceAll('\\\n', ' ').split('\n');
      for (const line of lines) {
        const command = line.replace(/\s#.*$/, '');
        for (const run of command.matchAll(/\bschoolhooks (\w+)([^|&;<>]*)/g)) {
          const found = commands.get(run[1]!);
          if (found === undefined) {
            wrong.push(`${block.file}:${block.line}: no command ${run[1]}`);
            continue;
          }
          for (const option of run[2]!.matchAll(/(?:^|\s)--([a-z][a-z-]*)/g)) {
            if (!(option[1]! in found.options))
              wrong.push(`${block.file}:${block.line}: ${run[1]} has no --${option[1]}`);
          }
        }
        for (const script of command.matchAll(/\bnpm run (\S+)/g)) {
          if (!scripts.includes(script[1]!))
            wrong.push(`${block.file}:${block.line}: no npm script ${script[1]}`);
        }
        for (const file of command.matchAll(
          /(?:^|\s)((?:examples|fixtures|bench|scripts)\/\S+)/g,
        )) {
          if (!existsSync(join(ROOT, file[1]!)))
            wrong.push(`${block.file}:${block.line}: no file ${file[1]}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('listen for the errors of every pg pool they create, so a PostgreSQL restart ends no process', () => {
    // pg emits an idle connection's error on its pool, and an 'error' nobody listens to ends the
    // process ("Connection terminated unexpectedly"): a snippet copied as it is must not. A pool
    // given to postgresStore is heard by the store (test/stores/postgres-restart.test.ts); any
    // other needs a listener of its own.
    const examples = readdirSync(join(ROOT, 'examples'))
      .filter((file) => /\.[jt]s$/.test(file))
      .map((file) => ({
        file: `examples/${file}`,
        line: 1,
        lang: 'js',
        body: readPage(`examples/${file}`),
      }));
    const unheard: string[] = [];
    let pools = 0;
    for (const { file, line, body } of [...blocks, ...examples]) {
      for (const created of body.matchAll(/(?:(\w+) = )?new (?:pg\.)?Pool\(/g)) {
        pools++;
        const name = created[1];
        const heard =
          name !== undefined &&
          (body.includes(`${name}.on('error', `) ||
            new RegExp(`postgresStore\\(\\{ (?:pool: )?${name}\\b`).test(body));
        if (!heard) {
          unheard.push(`${file}:${line}: ${created[0]}`);
        }
      }
    }
    expect(pools).toBeGreaterThanOrEqual(5);
    expect(unheard).toEqual([]);
  });
});
