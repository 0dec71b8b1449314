/**
 * The inspector's live updates: a server-sent event stream per open page, the whole list first
 * and then one event per delivery added or updated.
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DeliveryLog } from './delivery-log.js';
import { SECURITY_HEADERS } from './guard.js';
import type { DeliveryList } from './page-api.js';

/** What {@link createLiveStreams} returns. */
export interface LiveStreams {
  /** Answer `req` with a stream that lasts until the page goes. */
  open(req: IncomingMessage, res: ServerResponse): void;
  /** End every open stream, so the server can close. */
  close(): void;
}

/** The live streams of `log`'s changes. */
export function createLiveStreams(log: DeliveryLog): LiveStreams {
  const streams = new Set<ServerResponse>();
  return {
    open(req, res) {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream; charset=utf-8',
        connection: 'keep-alive',
      });
      const send = (event: string, data: unknown): void =>
        void res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
      // The whole list first, then each change: a reconnecting page starts again from the truth.
      res.write('retry: 1000\n\n');
      send('reset', { keep: log.keep, deliveries: log.summaries() } satisfies DeliveryList);
      const stop = log.subscribe(send);
      const ping = setInterval(() => res.write(': ping\n\n'), 15_000);
      ping.unref();
      streams.add(res);
      req.once('close', () => {
        stop();
        clearInterval(ping);
        streams.delete(res);
      });
    },
    close() {
      for (const res of streams) res.end();
      streams.clear();
    },
  };
}
