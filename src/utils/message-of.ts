/**
 * The message of anything thrown, written once for every module that logs or wraps one.
 * @module
 */

/** An Error's `message`, else the thrown value as a string. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
