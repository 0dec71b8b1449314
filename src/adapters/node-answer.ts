/**
 * The answer on Node's `ServerResponse`, shared by the node:http and Express adapters.
 * @module
 */

import type { ServerResponse } from 'node:http';

/**
 * Answer with `status`, `headers` (a fresh object from `answerHeaders`, which this completes with
 * the length) and `body` as JSON, straight through Node's `writeHead`/`end`: the platform reads
 * only the status, so a framework's ETag, charset and content negotiation would be work nobody
 * reads.
 */
export function sendJson(
  res: ServerResponse,
  status: number,
  headers: Record<string, string | number>,
  body: object,
): void {
  const json = JSON.stringify(body);
  headers['content-length'] = Buffer.byteLength(json);
  res.writeHead(status, headers);
  res.end(json);
}
