/**
 * The inspector page's files (HTML, CSS, JS), shipped in the package: `src/cli/inspector/assets/`
 * in the repository, copied by the build to `dist/inspector/`. Read once, when the inspector
 * starts, so a broken install fails at once with a clear message rather than on the first visit.
 * @module
 */

import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One file the page is made of. */
export interface InspectorAsset {
  type: string;
  content: string;
}

/** The page's files by the name they are served under, below `/_schoolhooks/`. */
const FILES = {
  'index.html': 'text/html; charset=utf-8',
  'inspector.css': 'text/css; charset=utf-8',
  'inspector.js': 'text/javascript; charset=utf-8',
} as const;

/** The folder of this module (the CommonJS build gets `import.meta.url` from tsup's shims). */
function moduleFolder(): string {
  return dirname(fileURLToPath(import.meta.url));
}

/**
 * Every asset, by name. Looks in `assets/` next to this file (running from the sources) and in
 * `inspector/` next to the bundle that holds it (`dist/`).
 */
export function loadInspectorAssets(): ReadonlyMap<string, InspectorAsset> {
  const here = moduleFolder();
  const folder = [join(here, 'assets'), join(here, 'inspector')].find((candidate) =>
    existsSync(join(candidate, 'index.html')),
  );
  if (folder === undefined) {
    throw new Error(`the inspector's page is missing: no assets/ or inspector/ folder in ${here}`);
  }
  return new Map(
    Object.entries(FILES).map(([name, type]) => [
      name,
      { type, content: readFileSync(join(folder, name), 'utf8') },
    ]),
  );
}
