import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import { createReceiver, type SchoolhooksError } from '../src/index.js';
import { listen, post, type AdapterServer } from './adapters/suite.js';
import { SECRET, signedHeaders } from './helpers/deliveries.js';

/** A signed body whose idempotencyKey is `key-` followed by the given raw byte. */
function deliveryWithKeyByte(byte: number) {
  const text = `{"event":"UserSignedIn","timestamp":"${new Date().toISOString()}","idempotencyKey":"key-#","data":{"user":{"id":1}}}`;
  const body = Buffer.from(text);
  body[body.indexOf('#')] = byte;
  return { body, headers: signedHeaders(body) };
}

describe('a body that is not UTF-8', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers 400 malformed to two deliveries whose keys differ only by an invalid byte', async () => {
    const ran: string[] = [];
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET })
      .on('UserSignedIn', (event) => void ran.push(event.idempotencyKey))
      .onError((error) => void errors.push(error));
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    // 0xff and 0xfe are never UTF-8; a lenient decoder reads both as U+FFFD, one key.
    const answers = [
      await post(server.url, deliveryWithKeyByte(0xff)),
      await post(server.url, deliveryWithKeyByte(0xfe)),
    ];
    for (const answer of answers) {
      expect(answer).toMatchObject({ status: 400, body: { ok: false, outcome: 'malformed' } });
    }
    expect(errors.map((e) => e.message)).toEqual([
      'body is not valid UTF-8',
      'body is not valid UTF-8',
    ]);
    expect(ran).toEqual([]);
  });

  it('processes the same body once its byte is valid UTF-8', async () => {
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    const answer = await post(server.url, deliveryWithKeyByte(0x41));
    expect(answer).toMatchObject({
      status: 200,
      body: { outcome: 'processed', idempotencyKey: 'key-A' },
    });
  });
});
