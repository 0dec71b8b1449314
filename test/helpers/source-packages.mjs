/**
 * `node --import tsx --import ./test/helpers/source-packages.mjs file.js`: `schoolhooks` and its
 * subpaths resolve to the TypeScript sources instead of dist/, so a test runs an example as it is
 * written, without a build. Registered after tsx, these hooks run first and hand tsx the .ts file.
 * @module
 */

import { register } from 'node:module';

register('./source-packages-hooks.mjs', import.meta.url);
