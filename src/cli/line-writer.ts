/**
 * How the bin writes lines to stdout and stderr: until the reader is gone, then not at all.
 * @module
 */

/** The part of a process's output stream a {@link lineWriter} uses. */
export interface OutputStream {
  write(text: string): unknown;
  on(event: 'error', listener: (error: NodeJS.ErrnoException) => void): unknown;
}

/**
 * A writer of lines to `stream` that takes a reader gone as the end of the output: after
 * `schoolhooks send … | head -1` read its line and exited, the next write fails with EPIPE, and
 * what would follow is dropped quietly, as `git log | head -1` ends. The command runs to its end
 * and exits with its own code (a `send` whose answer was not 2xx still exits 1). Without this,
 * the EPIPE was an unhandled 'error' event: a stack trace, and exit code 1 whatever happened.
 * Any other error of the stream is thrown, as Node would.
 */
export function lineWriter(stream: OutputStream): (text: string) => void {
  let readerGone = false;
  stream.on('error', (error) => {
    if (error.code !== 'EPIPE') throw error;
    readerGone = true;
  });
  return function writeLine(text) {
    if (!readerGone) stream.write(`${text}\n`);
  };
}
