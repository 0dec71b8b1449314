/**
 * The core as a runtime without node:crypto runs it (a Worker without Node compatibility): the
 * modules of `src/` are loaded afresh while `process.getBuiltinModule` answers nothing for
 * node:crypto, so `src/utils/crypto.ts` chooses Web Crypto exactly as it does there. Production code
 * holds no switch for this.
 */

import { vi } from 'vitest';

const NODE_CRYPTO_IDS = new Set(['node:crypto', 'crypto']);

/**
 * What `load` imports, evaluated anew as in a runtime without node:crypto. Import the module
 * whose functions you call and take every other value (error classes) from the same result:
 * classes of the fresh copy are not those of the statically imported one.
 *
 * @example
 * ```ts
 * const { createReceiver } = await importWithoutNodeCrypto(() => import('../src/index.js'));
 * ```
 */
export async function importWithoutNodeCrypto<T>(load: () => Promise<T>): Promise<T> {
  const builtin = process.getBuiltinModule.bind(process);
  const hidden = vi
    .spyOn(process, 'getBuiltinModule')
    .mockImplementation(((id: string) =>
      NODE_CRYPTO_IDS.has(id) ? undefined : builtin(id)) as typeof process.getBuiltinModule);
  vi.resetModules();
  try {
    return await load();
  } finally {
    hidden.mockRestore();
    // Later imports of the file get the usual modules again.
    vi.resetModules();
  }
}
