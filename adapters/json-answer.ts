/**
 * Writing the receiver's answer on a Node response, shared by the node:http and Express adapters.
 * @module
 */

import type { ServerResponse } from 'node:http';

/**
 * Answer with `status` and `body` as JSON, straight through Node's `writeHead`/`end`: the
 * platform reads only the status, so a framework's ETag, charset and content negotiation would
 * be work nobody reads.
 */
export function sendJson(res: ServerResponse, status: number, body: object): void {
  const json = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(json),
  });
  res.end(json);
}
