/**
 * A function that does nothing, written once.
 * @module
 */

/** Does nothing: a listener or a callback that must exist and has nothing to do. */
export function noop(): void {}
