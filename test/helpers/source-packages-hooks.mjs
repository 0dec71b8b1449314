/**
 * Module resolution hooks for source-packages.mjs: `schoolhooks[/subpath]` -> its source file.
 * @module
 */

const root = new URL('../../', import.meta.url);

/** The entries of tsup.config.ts, by the specifier a user imports. */
const SOURCES = {
  schoolhooks: 'src/index.ts',
  'schoolhooks/express': 'adapters/express.ts',
  'schoolhooks/hono': 'adapters/hono.ts',
  'schoolhooks/node': 'adapters/node.ts',
  'schoolhooks/fetch': 'adapters/fetch.ts',
  'schoolhooks/redis': 'src/stores/redis.ts',
  'schoolhooks/bullmq': 'src/inbox/bullmq.ts',
  'schoolhooks/api': 'src/api/index.ts',
  'schoolhooks/links': 'src/links/index.ts',
  'schoolhooks/testing': 'src/testing/index.ts',
};

export async function resolve(specifier, context, next) {
  const source = SOURCES[specifier];
  return next(source === undefined ? specifier : new URL(source, root).href, context);
}
