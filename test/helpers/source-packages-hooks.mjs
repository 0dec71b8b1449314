/**
 * Module resolution hooks for source-packages.mjs: `schoolhooks[/subpath]` -> its source file.
 * @module
 */

import { sourceOf } from '../../scripts/entries.mjs';

const root = new URL('../../', import.meta.url);

export async function resolve(specifier, context, next) {
  // `schoolhooks` and `schoolhooks/<name>`, resolved as tsup.config.ts builds them.
  const name =
    specifier === 'schoolhooks' ? 'index' : /^schoolhooks\/([a-z-]+)$/.exec(specifier)?.[1];
  const source = name === undefined ? undefined : sourceOf(name);
  return next(source === undefined ? specifier : new URL(source, root).href, context);
}
