/**
 * untouchedNodeRequest: the Node request behind a Fetch handler is read directly only while
 * nothing else has started reading it. Checked on real requests of a real node:http server.
 */

import { once } from 'node:events';
import { createServer, request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fetchRequestInput, untouchedNodeRequest } from '../../src/adapters/fetch-request-input.js';
import { nodeBodyReader } from '../../src/receiving/request.js';

/** Each request the server gets is handed to the next waiting test. */
let nextRequest: (req: IncomingMessage) => Promise<void>;
const server = createServer((req, res) => {
  void nextRequest(req).finally(() => res.end('ok'));
});
let port = 0;

beforeAll(async () => {
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** POST `body`, run `inspect` on the server's IncomingMessage, and return what it returned. */
async function onRequest<T>(body: string, inspect: (req: IncomingMessage) => Promise<T>) {
  let result: Promise<T> | undefined;
  const served = new Promise<void>((resolve) => {
    nextRequest = async (req) => {
      result = inspect(req);
      await result.catch(() => undefined);
      resolve();
    };
  });
  const client = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/' });
  client.end(body);
  const [response] = (await once(client, 'response')) as [IncomingMessage];
  response.resume();
  await served;
  return result!;
}

describe('untouchedNodeRequest', () => {
  it('gives the request nobody has read yet, and its bytes can be read', async () => {
    const bytes = await onRequest('{"a":1}', async (req) => {
      const incoming = untouchedNodeRequest({ incoming: req, outgoing: {} });
      expect(incoming).toBe(req);
      return nodeBodyReader(incoming!)(1024);
    });
    expect(new TextDecoder().decode(bytes as Uint8Array)).toBe('{"a":1}');
  });

  it('refuses a request a web stream was made over (a Fetch Request built on it)', async () => {
    const found = await onRequest('{}', async (req) => {
      const stream = Readable.toWeb(req);
      const found = untouchedNodeRequest({ incoming: req });
      await stream.cancel();
      return found;
    });
    expect(found).toBeUndefined();
  });

  it('refuses a request something else listens to, or that was read to its end', async () => {
    const listened = await onRequest('{}', async (req) => {
      req.on('data', () => {});
      return untouchedNodeRequest({ incoming: req });
    });
    expect(listened).toBeUndefined();
    const ended = await onRequest('{}', async (req) => {
      for await (const chunk of req) void chunk;
      return untouchedNodeRequest({ incoming: req });
    });
    expect(ended).toBeUndefined();
  });

  it('gives nothing for what other servers pass next to a Request', () => {
    expect(untouchedNodeRequest(undefined)).toBeUndefined();
    expect(untouchedNodeRequest(null)).toBeUndefined();
    expect(untouchedNodeRequest('env')).toBeUndefined();
    // Workers' bindings, Next.js' context, Bun's server: no Node stream under `incoming`.
    expect(untouchedNodeRequest({ incoming: { get: () => null } })).toBeUndefined();
    expect(untouchedNodeRequest({ params: {} })).toBeUndefined();
    expect(untouchedNodeRequest({ incoming: 'x' })).toBeUndefined();
  });

  it('takes only something shaped like an unread Node request: listeners, headers, not flowing, not ended', () => {
    const unread = {
      on: () => undefined,
      headers: {},
      readableFlowing: null,
      readableEnded: false,
    };
    expect(untouchedNodeRequest({ incoming: unread })).toBe(unread);
    for (const [label, incoming] of Object.entries({
      'no on()': { ...unread, on: 'on' },
      'headers null': { ...unread, headers: null },
      'headers a string': { ...unread, headers: 'content-type: application/json' },
      flowing: { ...unread, readableFlowing: true },
      paused: { ...unread, readableFlowing: false },
      ended: { ...unread, readableEnded: true },
      'no readableEnded': { ...unread, readableEnded: undefined },
      null: null,
    })) {
      expect(untouchedNodeRequest({ incoming }), label).toBeUndefined();
    }
  });
});

describe('fetchRequestInput', () => {
  it("reads a Request's method, headers and exact bytes when no Node request is passed along", async () => {
    const bytes = new Uint8Array([0x7b, 0xc3, 0xa9, 0x7d]); // "{é}"
    const request = new Request('http://localhost/webhooks', {
      method: 'POST',
      headers: { signature: 'abc', 'content-type': 'application/json' },
      body: bytes,
    });
    const input = fetchRequestInput(request, undefined);
    expect(input.method).toBe('POST');
    expect(input.headers).toBe(request.headers);
    const body = await input.body(1_000);
    expect(body === undefined ? undefined : new Uint8Array(Buffer.from(body))).toEqual(bytes);
  });
});
