/**
 * The core and the adapters import the optional peers of package.json and node:http for their
 * types only: importing `schoolhooks` must never load a framework the user did not install.
 * Where that rule bends (a subpath built on a peer, the toolkit and the CLI, OpenTelemetry's one
 * home) is written once, in scripts/boundaries.json, which eslint.config.js and
 * scripts/check-package.mjs read too; this test reads it and checks every file of src/ and
 * src/adapters/ against it, and checks the scanner against imports planted below.
 * Read with the TypeScript parser, so type-only imports are told apart from imports that survive
 * compilation.
 */

import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import pkg from '../../package.json' with { type: 'json' };
import boundaries from '../../scripts/boundaries.json' with { type: 'json' };

const root = join(import.meta.dirname, '..', '..');

/** Whether `file` is the manifest's `path` (a folder, ending in `/`, holds it). */
const isUnder = (file: string, path: string): boolean =>
  path.endsWith('/') ? file.startsWith(path) : file === path;

/** The optional peers, as package.json lists them. */
const PEERS = Object.entries(pkg.peerDependenciesMeta)
  .filter(([, meta]) => meta.optional)
  .map(([name]) => name);

const escape = (name: string) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** A module name of the manifest as a pattern: `@hono/*` is any package of the scope. */
const pattern = (name: string) => escape(name).replace('\\*', '[^/]+');

/** Modules only types may come from: the optional peers and the servers, with their subpaths. */
const FORBIDDEN = new RegExp(
  `^(?:${[...PEERS, ...boundaries.servers].map(pattern).join('|')})(?:\\/.*)?$`,
);

/** The module of `schoolhooks/bullmq`, by any relative path: loading it loads bullmq. */
const BULLMQ_ENTRY = /(?:^|\/)inbox\/bullmq(?:\.js)?$|^\.\/bullmq(?:\.js)?$/;

interface PeerEntry {
  path: string;
  loads?: string[];
  loadsWithImportCall?: string[];
}

/** The peers `file` may load at runtime: statically, and with `import()`. */
function allowedPeers(file: string | undefined): { loads: string[]; called: string[] } {
  const entry = (boundaries.peerEntries as PeerEntry[]).find(
    ({ path }) => file !== undefined && isUnder(file, path),
  );
  return { loads: entry?.loads ?? [], called: entry?.loadsWithImportCall ?? [] };
}

/** Where servers and clients are allowed (the manifest's `unrestricted`). */
const EXEMPT = boundaries.unrestricted.map(({ path }) => path);

/** The TypeScript files of `src/` and `src/adapters/`, repo-relative. */
function sourceFiles(): string[] {
  return boundaries.scanned
    .flatMap((dir) =>
      readdirSync(join(root, dir), { recursive: true, encoding: 'utf8' }).map((file) =>
        relative(root, join(root, dir, file))
          .split('\\')
          .join('/'),
      ),
    )
    .filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts'))
    .sort();
}

/** The files that must stay framework-free. */
function coreFiles(): string[] {
  return sourceFiles().filter((file) => !EXEMPT.some((exempt) => isUnder(file, exempt)));
}

/** Where OpenTelemetry may be imported: the peer entry that loads it. */
const OPEN_TELEMETRY_HOME = (boundaries.peerEntries as PeerEntry[]).find(({ loads }) =>
  loads?.some((name) => name.startsWith(boundaries.openTelemetry)),
)!.path;

/**
 * The module specifiers a file loads at runtime. Under `verbatimModuleSyntax` only a whole
 * `import type` / `export type` disappears: `import { type A } from 'x'` still compiles to
 * `import {} from 'x'`, which loads `x`.
 */
function runtimeImports(source: string, fileName = 'file.ts', withTypes = false): Imported[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true);
  const found: Imported[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && (withTypes || !node.importClause?.isTypeOnly)) {
      found.push({ name: specifier(node.moduleSpecifier), importCall: false });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier &&
      (withTypes || !node.isTypeOnly)
    ) {
      found.push({ name: specifier(node.moduleSpecifier), importCall: false });
    } else if (
      ts.isImportEqualsDeclaration(node) &&
      (withTypes || !node.isTypeOnly) &&
      ts.isExternalModuleReference(node.moduleReference)
    ) {
      found.push({ name: specifier(node.moduleReference.expression), importCall: false });
    } else if (ts.isCallExpression(node) && node.arguments.length > 0) {
      const isImport = node.expression.kind === ts.SyntaxKind.ImportKeyword;
      const isRequire = ts.isIdentifier(node.expression) && node.expression.text === 'require';
      if (isImport || isRequire) {
        found.push({ name: specifier(node.arguments[0]!), importCall: isImport });
      }
    } else if (withTypes && ts.isImportTypeNode(node)) {
      const { argument } = node;
      if (ts.isLiteralTypeNode(argument)) {
        found.push({ name: specifier(argument.literal), importCall: false });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** A module a file imports, and whether with `import()`. */
interface Imported {
  name: string;
  importCall: boolean;
}

function specifier(node: ts.Node): string {
  // A computed specifier cannot be checked: report it, so it is seen and judged.
  return ts.isStringLiteralLike(node) ? node.text : `<computed: ${node.getText()}>`;
}

function forbiddenImports(source: string, fileName?: string): string[] {
  const { loads, called } = allowedPeers(fileName);
  return runtimeImports(source, fileName)
    .filter(
      ({ name, importCall }) =>
        ((FORBIDDEN.test(name) || BULLMQ_ENTRY.test(name)) &&
          !loads.includes(name) &&
          !(importCall && called.includes(name))) ||
        name.startsWith('<computed'),
    )
    .map(({ name }) => name);
}

describe('the core and the adapters', () => {
  const files = coreFiles();

  it('are all scanned, the exempt files aside', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'src/index.ts',
        'src/receiving/receiver.ts',
        'src/receiving/request.ts',
        'src/inbox/index.ts',
        'src/inbox/bullmq.ts',
        'src/adapters/express.ts',
        'src/adapters/hono.ts',
        'src/adapters/node.ts',
        'src/adapters/fetch.ts',
      ]),
    );
    expect(files.filter((file) => EXEMPT.some((exempt) => file.startsWith(exempt)))).toEqual([]);
  });

  it.each(files)('%s imports no framework or HTTP server at runtime', (file) => {
    expect(forbiddenImports(readFileSync(join(root, file), 'utf8'), file)).toEqual([]);
  });
});

/** Every import of OpenTelemetry in a file, type-only ones included. */
function openTelemetryImports(source: string, fileName?: string): string[] {
  return runtimeImports(source, fileName, true)
    .map(({ name }) => name)
    .filter((name) => name.startsWith(boundaries.openTelemetry));
}

describe('OpenTelemetry', () => {
  const files = sourceFiles().filter((file) => !file.startsWith(OPEN_TELEMETRY_HOME));

  it('is imported by src/otel, and every other file is scanned', () => {
    expect(files).toEqual(
      expect.arrayContaining([
        'src/index.ts',
        'src/telemetry/telemetry.ts',
        'src/receiving/receiver.ts',
      ]),
    );
    const otel = sourceFiles().filter((file) => file.startsWith(OPEN_TELEMETRY_HOME));
    expect(
      otel.flatMap((file) => openTelemetryImports(readFileSync(join(root, file), 'utf8'), file)),
    ).toContain('@opentelemetry/api');
  });

  it.each(files)('is not imported by %s, not even for types', (file) => {
    expect(openTelemetryImports(readFileSync(join(root, file), 'utf8'), file)).toEqual([]);
  });

  it.each([
    "import { trace } from '@opentelemetry/api';",
    "import type { Span } from '@opentelemetry/api';",
    "export type { Tracer } from '@opentelemetry/api';",
    "type Api = typeof import('@opentelemetry/api');",
    "const { W3CTraceContextPropagator } = require('@opentelemetry/core');",
  ])('is found in %s', (source) => {
    expect(openTelemetryImports(source)).toHaveLength(1);
  });
});

describe('the import scanner', () => {
  it.each([
    "import express from 'express';",
    "import { type Context } from 'hono';",
    "import 'ioredis';",
    "import * as http from 'node:http';",
    "import { request } from 'https';",
    "export { Hono } from 'hono';",
    "export * from 'hono/utils/http-status';",
    "import { serve } from '@hono/node-server';",
    "const http = await import('node:http');",
    "const { Redis } = require('ioredis');",
    "import Redis = require('ioredis');",
    "import { Queue } from 'bullmq';",
    "export { bullmqInbox } from './bullmq.js';",
    "const { bullmqInbox } = await import('../inbox/bullmq.js');",
  ])('flags %s', (source) => {
    expect(forbiddenImports(source)).toHaveLength(1);
  });

  it.each([
    "import type { Request } from 'express';",
    "import type * as Hono from 'hono';",
    "export type { Context } from 'hono';",
    "type RedisModule = typeof import('ioredis');",
    "import type { IncomingMessage } from 'node:http';",
    "import { z } from 'zod';",
    "import { nodeBodyReader } from '../src/express.js';",
    "import 'expressive';",
    "import { createHmac } from 'node:crypto';",
    "import type { Queue } from 'bullmq';",
    "import { memoryInbox } from './memory.js';",
  ])('lets %s through', (source) => {
    expect(forbiddenImports(source)).toEqual([]);
  });

  it.each(PEERS)('flags an import of the optional peer %s and of its subpaths', (peer) => {
    expect(forbiddenImports(`import x from '${peer}';`)).toEqual([peer]);
    expect(forbiddenImports(`import x from '${peer}/sub';`)).toEqual([`${peer}/sub`]);
    expect(forbiddenImports(`import type x from '${peer}';`)).toEqual([]);
  });

  it('lets schoolhooks/nestjs load Nest, and nothing else of the peers', () => {
    const entry = 'src/adapters/nestjs.ts';
    expect(forbiddenImports("import { Module } from '@nestjs/common';", entry)).toEqual([]);
    expect(forbiddenImports("import { DiscoveryService } from '@nestjs/core';", entry)).toEqual([]);
    expect(forbiddenImports("import Fastify from 'fastify';", entry)).toEqual(['fastify']);
    expect(
      forbiddenImports("import { Module } from '@nestjs/common';", 'src/adapters/koa.ts'),
    ).toEqual(['@nestjs/common']);
  });

  it('lets schoolhooks/bullmq load bullmq and ioredis, and nothing else of the peers', () => {
    const entry = 'src/inbox/bullmq.ts';
    expect(forbiddenImports("import { Queue } from 'bullmq';", entry)).toEqual([]);
    expect(forbiddenImports("import { Redis } from 'ioredis';", entry)).toEqual([]);
    expect(forbiddenImports("import express from 'express';", entry)).toEqual(['express']);
    expect(forbiddenImports("import { Queue } from 'bullmq';", 'src/inbox/index.ts')).toEqual([
      'bullmq',
    ]);
  });

  it('lets schoolhooks/postgres load pg-boss with import() only', () => {
    const entry = 'src/inbox/pg-boss.ts';
    expect(forbiddenImports("const { PgBoss } = await import('pg-boss');", entry)).toEqual([]);
    expect(forbiddenImports("import { PgBoss } from 'pg-boss';", entry)).toEqual(['pg-boss']);
    expect(forbiddenImports("const pg = await import('pg');", entry)).toEqual(['pg']);
    expect(forbiddenImports("const { PgBoss } = await import('pg-boss');", 'src/index.ts')).toEqual(
      ['pg-boss'],
    );
  });

  it('lets src/otel load OpenTelemetry, and no other file', () => {
    expect(
      forbiddenImports(
        "import { trace } from '@opentelemetry/api';",
        'src/telemetry/otel/index.ts',
      ),
    ).toEqual([]);
    expect(
      forbiddenImports("import express from 'express';", 'src/telemetry/otel/index.ts'),
    ).toEqual(['express']);
    expect(
      forbiddenImports("import { trace } from '@opentelemetry/api';", 'src/telemetry/telemetry.ts'),
    ).toEqual(['@opentelemetry/api']);
  });

  it('names in its manifest only files that exist and peers package.json lists', () => {
    const files = sourceFiles();
    for (const { path } of [...boundaries.unrestricted, ...boundaries.peerEntries]) {
      expect(
        files.some((file) => isUnder(file, path)),
        path,
      ).toBe(true);
    }
    for (const entry of boundaries.peerEntries as (PeerEntry & { typesOf?: string[] })[]) {
      for (const peer of [
        ...(entry.loads ?? []),
        ...(entry.loadsWithImportCall ?? []),
        ...(entry.typesOf ?? []),
      ]) {
        expect(PEERS, `${entry.path}: ${peer}`).toContain(peer);
      }
    }
  });

  it('flags an import whose specifier it cannot read', () => {
    expect(forbiddenImports('const name = "hono"; await import(name);')).toEqual([
      '<computed: name>',
    ]);
  });
});
