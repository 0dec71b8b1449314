/**
 * The one way a store turns a server's failure into a `StoreUnavailableError`.
 * @module
 */

import { StoreUnavailableError, withCauses } from '../errors.js';

/**
 * A `StoreUnavailableError` for any failure of a call to `server`. Its cause keeps only the
 * name, message and code of what the client threw (a client's own errors may carry a command's
 * arguments, lease tokens among them), with any `user:password@` of a URL blanked out. The
 * message says what the client's error chain says (`connect ECONNREFUSED …` is often a `cause`).
 */
export function storeUnavailable(
  server: string,
  operation: string,
  error: unknown,
): StoreUnavailableError {
  if (error instanceof StoreUnavailableError) return error;
  const raw = error instanceof Error ? withCauses(error.message, error.cause) : String(error);
  const message = raw.replace(/\/\/[^/@\s]*@/g, '//***@');
  const cause: Error & { code?: string } = new Error(message);
  if (error instanceof Error) cause.name = error.name;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') cause.code = code;
  return new StoreUnavailableError(`${server} ${operation} failed: ${message}`, { cause });
}
