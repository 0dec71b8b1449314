/**
 * Where `replay` finds a folder: as given, else, for `fixtures/…`, the fixtures this package
 * ships, so `schoolhooks replay fixtures/invalid` works from any project.
 * @module
 */

import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The folder to read: `folder` when it exists, else the packaged one it names, else as given. */
export function resolveFixtureFolder(folder: string): string {
  if (isFolder(folder)) return folder;
  const relative = /^(?:\.\/)?(fixtures(?:\/.*)?)$/.exec(folder.replaceAll('\\', '/'))?.[1];
  const root = relative === undefined ? undefined : packageRoot();
  if (root === undefined || relative === undefined) return folder;
  const packaged = join(root, relative);
  return isFolder(packaged) ? packaged : folder;
}

function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** This package's root: the nearest folder above this module with schoolhooks' package.json. */
function packageRoot(): string | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const { name } = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown };
        if (name === 'schoolhooks') return dir;
      } catch {
        // not a package.json we can read: keep looking up
      }
    }
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
