/**
 * The package's version, for the instrumentation scope of `schoolhooks/otel`. A test keeps it
 * equal to package.json's, so the bundle does not carry package.json itself.
 * @module
 */

/** The version of schoolhooks this build is. */
export const VERSION = '0.2.0';
