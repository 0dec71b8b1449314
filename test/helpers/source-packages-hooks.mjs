/**
 * Module resolution hooks for source-packages.mjs: `schoolhooks[/subpath]` -> its source file.
 * @module
 */

const root = new URL('../../', import.meta.url);

/** The entries of tsup.config.ts that are not an adapter, by the specifier a user imports. */
const SOURCES = {
  schoolhooks: 'src/index.ts',
  'schoolhooks/redis': 'src/stores/redis.ts',
  'schoolhooks/postgres': 'src/postgres.ts',
  'schoolhooks/bullmq': 'src/inbox/bullmq.ts',
  'schoolhooks/otel': 'src/otel/index.ts',
  'schoolhooks/api': 'src/api/index.ts',
  'schoolhooks/links': 'src/links/index.ts',
  'schoolhooks/testing': 'src/testing/index.ts',
};

export async function resolve(specifier, context, next) {
  // Any other subpath is an adapter, `adapters/<name>.ts`, as in tsup.config.ts.
  const adapter = /^schoolhooks\/([a-z-]+)$/.exec(specifier)?.[1];
  const source = SOURCES[specifier] ?? (adapter && `adapters/${adapter}.ts`);
  return next(source === undefined ? specifier : new URL(source, root).href, context);
}
