// A `tenant` option that throws (a route with a malformed percent-encoding, read with
// decodeURIComponent) must cost one 404, never the server: the adapter kit hands the reader to
// the receiver, which answers `unknown_tenant` and tells onError what was thrown. Before, the
// adapter's promise rejected, and node:http or Express 4 let the process die of it.
import { createServer } from 'node:http';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { expressMiddleware } from '../../src/adapters/express.js';
import { nodeListener } from '../../src/adapters/node.js';
import {
  createReceiver,
  UnknownTenantError,
  type Receiver,
  type SchoolhooksError,
} from '../../src/index.js';
import { createTestDelivery } from '../helpers/deliveries.js';
import { expectAnswer, listen, post, type AdapterServer } from './suite.js';

const SECRET_A = 'secret of school a';

/** The tenant of `/webhooks/school/<tenant>`, decoded as a seller would write it: it throws on `%E0%A4%A`. */
function decodedTenant(url: string | undefined): string | undefined {
  return decodeURIComponent(url?.split('?')[0]?.split('/')[3] ?? '');
}

const servers: AdapterServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

function lookupReceiver(): { receiver: Receiver; errors: SchoolhooksError[]; asked: string[] } {
  const errors: SchoolhooksError[] = [];
  const asked: string[] = [];
  const receiver = createReceiver({
    secret: ({ tenant }) => {
      asked.push(tenant);
      return tenant === 'school-a' ? SECRET_A : undefined;
    },
  })
    .onAny(() => {})
    .onError((error) => void errors.push(error));
  return { receiver, errors, asked };
}

const SERVE: Record<string, (receiver: Receiver) => Promise<AdapterServer>> = {
  'node:http': (receiver) =>
    listen(
      createServer(nodeListener(receiver, { tenant: (req) => decodedTenant(req.url) })).listen(
        0,
        '127.0.0.1',
      ),
      '/webhooks/school',
    ),
  express: (receiver) => {
    const app = express();
    // Mounted without a route parameter: Express would answer a parameter it cannot decode
    // itself (400), before any middleware.
    app.use(
      '/webhooks/school',
      expressMiddleware(receiver, { tenant: (req) => decodedTenant(req.originalUrl) }),
    );
    return listen(app.listen(0, '127.0.0.1'), '/webhooks/school');
  },
};

describe.each(Object.keys(SERVE))('%s: a `tenant` option that throws', (name) => {
  it('is answered 404 unknown_tenant, onError is told why, and the server goes on', async () => {
    const { receiver, errors, asked } = lookupReceiver();
    const server = await SERVE[name]!(receiver);
    servers.push(server);
    const delivery = createTestDelivery('UserSignedIn', { user: { id: 1 } }, { secret: SECRET_A });

    expectAnswer(await post(`${server.url}/%E0%A4%A`, delivery), 404, {
      ok: false,
      outcome: 'unknown_tenant',
    });
    expect(asked).toEqual([]);
    expect(errors).toHaveLength(1);
    const error = errors[0] as UnknownTenantError;
    expect(error).toBeInstanceOf(UnknownTenantError);
    expect(error.code).toBe('unknown_tenant');
    expect(error.tenant).toBeUndefined();
    expect(error.cause).toBeInstanceOf(URIError);
    expect(error.message).toMatch(/the `tenant` option threw\): URI malformed/);

    // The same server still answers the next delivery, on a route whose tenant reads.
    expectAnswer(await post(`${server.url}/school-a`, delivery), 200, {
      ok: true,
      outcome: 'processed',
      idempotencyKey: delivery.idempotencyKey,
    });
  });
});
