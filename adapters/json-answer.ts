/**
 * The receiver's answer as every adapter writes it: JSON, and the connection closed after a 413.
 * @module
 */

import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { OUTCOMES } from '../src/outcome.js';

/** The status of a body over the limit (`too_large` in the outcome table). */
const TOO_LARGE = OUTCOMES.too_large.status;

/**
 * The headers an answer with `status` needs besides its content type: after a 413 the connection
 * ends (`connection: close`), undefined otherwise. The body may still be arriving, and reading it
 * only to drop it would hold the socket for as long as the client keeps sending (a server's
 * default `requestTimeout` is 5 minutes). The platform opens a new connection for its retry.
 * Every adapter that answers over a socket takes its headers from here or from
 * {@link answerHeaders}, so the rule is written once; the receiver's result says what to answer,
 * not how a connection is kept.
 */
export function closingHeaders(status: number): Record<string, string> | undefined {
  return status === TOO_LARGE ? { connection: 'close' } : undefined;
}

/** The headers of an answer with `status`: JSON, and {@link closingHeaders}. */
export function answerHeaders(status: number): Record<string, string> {
  const closing = closingHeaders(status);
  // A literal for the common answer: no spread on the hot path.
  return closing
    ? { 'content-type': 'application/json', ...closing }
    : { 'content-type': 'application/json' };
}

/**
 * Answer with `status` and `body` as JSON, straight through Node's `writeHead`/`end`: the
 * platform reads only the status, so a framework's ETag, charset and content negotiation would
 * be work nobody reads. Shared by the node:http and Express adapters.
 */
export function sendJson(res: ServerResponse, status: number, body: object): void {
  const json = JSON.stringify(body);
  // answerHeaders gives a fresh object: adding the length to it spares a copy per answer.
  const headers: OutgoingHttpHeaders = answerHeaders(status);
  headers['content-length'] = Buffer.byteLength(json);
  res.writeHead(status, headers);
  res.end(json);
}
