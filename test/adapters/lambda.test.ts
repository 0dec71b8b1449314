/**
 * The Lambda handler behind each HTTP trigger. A Lambda has no server: here a node:http server on
 * loopback plays the trigger, turning each real request into the event that trigger sends (its
 * header casing, multi-value headers, base64 bodies) and the handler's result back into the
 * answer, so the shared suite runs unchanged over every event shape.
 */

import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type {
  ALBEvent,
  ALBResult,
  APIGatewayProxyEvent,
  APIGatewayProxyEventV2,
  APIGatewayProxyResult,
  APIGatewayProxyStructuredResultV2,
  Context,
  LambdaFunctionURLEvent,
} from 'aws-lambda';
import { describe, expect, expectTypeOf, it } from 'vitest';
import {
  lambdaHandler,
  type LambdaEvent,
  type LambdaHandlerOptions,
  type LambdaResult,
} from '../../src/adapters/lambda.js';
import {
  createReceiver,
  MalformedEnvelopeError,
  type Receiver,
  type SchoolhooksError,
} from '../../src/index.js';
import { createTestDelivery, SECRET, sign } from '../helpers/deliveries.js';
import { adapterSuite, listen, tenantOfPath } from './suite.js';

type Trigger = 'rest' | 'http-api' | 'function-url' | 'alb' | 'alb-multi-value';

interface Received {
  method: string;
  path: string;
  /** Node's raw headers: names as the client sent them, in order. */
  rawHeaders: string[];
  body: Buffer;
}

/** Values by name, in the case `named` gives them, repeated headers kept in order. */
function valuesOf(rawHeaders: string[], named: (name: string) => string) {
  const values: Record<string, string[]> = {};
  for (let i = 0; i < rawHeaders.length; i += 2) {
    (values[named(rawHeaders[i]!)] ??= []).push(rawHeaders[i + 1]!);
  }
  return values;
}

const lastOf = (values: Record<string, string[]>) =>
  Object.fromEntries(Object.entries(values).map(([name, list]) => [name, list.at(-1)!]));

/** The event a trigger sends for a request, with its body plain or base64-encoded. */
function eventOf(trigger: Trigger, request: Received, base64: boolean): LambdaEvent {
  const { method, path, rawHeaders } = request;
  const body = request.body.length === 0 ? null : request.body.toString(base64 ? 'base64' : 'utf8');
  const lower = valuesOf(rawHeaders, (name) => name.toLowerCase());
  switch (trigger) {
    case 'rest': {
      // API Gateway REST keeps the client's casing, and sends both header maps.
      const asSent = valuesOf(rawHeaders, (name) => name);
      const event = {
        resource: path,
        path,
        httpMethod: method,
        headers: lastOf(asSent),
        multiValueHeaders: asSent,
        queryStringParameters: null,
        requestContext: { httpMethod: method, path, stage: 'test', requestId: randomUUID() },
        body,
        isBase64Encoded: base64,
      };
      return event;
    }
    case 'http-api':
    case 'function-url': {
      // Payload 2.0: lowercase names, repeated values joined with commas, no body key when empty.
      const headers = Object.fromEntries(
        Object.entries(lower).map(([name, list]) => [name, list.join(',')]),
      );
      const event = {
        version: '2.0' as const,
        routeKey: trigger === 'http-api' ? `${method} ${path}` : '$default',
        rawPath: path,
        rawQueryString: '',
        headers,
        requestContext: {
          http: { method, path, protocol: 'HTTP/1.1', sourceIp: '127.0.0.1' },
          requestId: randomUUID(),
        },
        ...(body !== null && { body }),
        isBase64Encoded: base64,
      };
      return event;
    }
    case 'alb':
    case 'alb-multi-value': {
      const event = {
        requestContext: { elb: { targetGroupArn: 'arn:aws:elasticloadbalancing:test' } },
        httpMethod: method,
        path,
        ...(trigger === 'alb'
          ? { headers: lastOf(lower), queryStringParameters: {} }
          : { multiValueHeaders: lower, multiValueQueryStringParameters: {} }),
        body: body ?? '',
        isBase64Encoded: base64,
      };
      return event;
    }
  }
}

/** The answer a trigger makes of a result: an ALB with multi-value headers reads only those. */
function headersOf(trigger: Trigger, result: LambdaResult): Record<string, string> {
  if (trigger === 'alb-multi-value') {
    if (result.headers || !result.multiValueHeaders) throw new Error('expected multiValueHeaders');
    return lastOf(result.multiValueHeaders);
  }
  if (!result.headers || result.multiValueHeaders) throw new Error('expected headers');
  return result.headers;
}

async function received(req: IncomingMessage): Promise<Received> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return {
    method: req.method ?? 'GET',
    path: new URL(req.url ?? '/', 'http://localhost').pathname,
    rawHeaders: req.rawHeaders,
    body: Buffer.concat(chunks),
  };
}

/**
 * How the handler reads the tenant of `/webhooks/school/<tenant>` behind `trigger`: API Gateway
 * gives the route's `pathParameters`; a Function URL and an ALB have none, so the path is read.
 */
function tenantBehind(trigger: Trigger): LambdaHandlerOptions['tenant'] {
  if (trigger === 'rest' || trigger === 'http-api') return (event) => event.pathParameters?.tenant;
  return (event) => tenantOfPath('httpMethod' in event ? event.path : event.rawPath);
}

/** The event with the route's parameters API Gateway adds on `/webhooks/school/{tenant}`. */
function withPathParameters(trigger: Trigger, event: LambdaEvent, path: string): LambdaEvent {
  const tenant = tenantOfPath(path);
  if (tenant === undefined || (trigger !== 'rest' && trigger !== 'http-api')) return event;
  return { ...event, pathParameters: { tenant } };
}

/** A loopback server that plays `trigger` in front of the handler (on tenant routes, with `tenant`). */
function serveBehind(trigger: Trigger, base64: boolean, receiver: Receiver, tenants = false) {
  const handler = tenants
    ? lambdaHandler(receiver, { tenant: tenantBehind(trigger) })
    : lambdaHandler(receiver);
  const server = createServer(async (req, res) => {
    const request = await received(req);
    const event = withPathParameters(trigger, eventOf(trigger, request, base64), request.path);
    const result = await handler(event, {});
    const body = result.isBase64Encoded ? Buffer.from(result.body, 'base64') : result.body;
    try {
      res.writeHead(result.statusCode, headersOf(trigger, result)).end(body);
    } catch (error) {
      // As a trigger does with a result it cannot read.
      res.writeHead(502).end(JSON.stringify({ message: String(error) }));
    }
  });
  return listen(server.listen(0, '127.0.0.1'), tenants ? '/webhooks/school' : '/webhooks');
}

const TRIGGERS: Trigger[] = ['rest', 'http-api', 'function-url', 'alb', 'alb-multi-value'];

for (const trigger of TRIGGERS) {
  for (const base64 of [false, true]) {
    adapterSuite(
      `lambda behind ${trigger}${base64 ? ', base64 bodies' : ''}`,
      (receiver) => serveBehind(trigger, base64, receiver),
      {
        wholeBodies: true,
        tenants: {
          serve: (receiver) => serveBehind(trigger, base64, receiver, true),
          withoutTenant: (receiver) => lambdaHandler(receiver),
        },
      },
    );
  }
}

describe('lambdaHandler called with events', () => {
  const delivery = createTestDelivery();

  function handler() {
    const receiver = createReceiver({ secret: SECRET }).onAny(() => {});
    return lambdaHandler(receiver);
  }

  /** The delivery as the trigger received it, signed. */
  function signedRequest(): Received {
    return {
      method: 'POST',
      path: '/webhooks',
      rawHeaders: Object.entries(delivery.headers).flat(),
      body: Buffer.from(delivery.body),
    };
  }

  it.each(TRIGGERS.flatMap((trigger) => [false, true].map((base64) => [trigger, base64] as const)))(
    'answers %s (base64: %s) 200 processed, then duplicate to the retry, in its shape',
    async (trigger, base64) => {
      const handle = handler();
      const request = signedRequest();
      const event = eventOf(trigger, request, base64);
      const first = await handle(event);
      expect(first.statusCode).toBe(200);
      expect(JSON.parse(first.body)).toMatchObject({ outcome: 'processed' });
      expect(headersOf(trigger, first)).toEqual({ 'content-type': 'application/json' });
      const retry = await handle(event);
      expect([retry.statusCode, JSON.parse(retry.body)]).toEqual([
        200,
        { ok: true, outcome: 'duplicate', idempotencyKey: delivery.idempotencyKey },
      ]);
    },
  );

  it.each(TRIGGERS)('answers %s 401 invalid_signature to a wrong signature', async (trigger) => {
    const request: Received = {
      method: 'POST',
      path: '/webhooks',
      rawHeaders: Object.entries({
        ...delivery.headers,
        signature: sign(delivery.body, 'other'),
      }).flat(),
      body: Buffer.from(delivery.body),
    };
    const result = await handler()(eventOf(trigger, request, true));
    expect([result.statusCode, JSON.parse(result.body)]).toEqual([
      401,
      { ok: false, outcome: 'invalid_signature' },
    ]);
  });

  it.each(TRIGGERS)(
    'answers %s 400 malformed to a body flagged base64 that is not, and says so',
    async (trigger) => {
      const errors: SchoolhooksError[] = [];
      const receiver = createReceiver({ secret: SECRET }).onError((error) => {
        errors.push(error);
      });
      // The JSON text as sent, flagged as base64: `{` and `"` are not base64 characters.
      const event = { ...eventOf(trigger, signedRequest(), false), isBase64Encoded: true };
      const result = await lambdaHandler(receiver)(event);
      expect([result.statusCode, JSON.parse(result.body)]).toEqual([
        400,
        { ok: false, outcome: 'malformed' },
      ]);
      expect(errors).toHaveLength(1);
      expect(errors[0]).toBeInstanceOf(MalformedEnvelopeError);
      expect(errors[0]?.message).toBe(
        'the event is flagged isBase64Encoded but its body is not base64',
      );
      // What the decoder said is kept for whoever reads the error's cause.
      expect(errors[0]?.cause).toBeInstanceOf(Error);
    },
  );

  it.each(TRIGGERS)(
    'answers %s 413 too_large without the hop-by-hop `connection` a server would send',
    async (trigger) => {
      const receiver = createReceiver({ secret: SECRET, maxBodyBytes: 64 }).onAny(() => {});
      const result = await lambdaHandler(receiver)(eventOf(trigger, signedRequest(), false));
      expect([result.statusCode, JSON.parse(result.body)]).toMatchObject([
        413,
        { ok: false, outcome: 'too_large' },
      ]);
      // The trigger owns the client's connection: the function's answer names none.
      expect(headersOf(trigger, result)).toEqual({ 'content-type': 'application/json' });
    },
  );

  it.each([
    ['no requestContext', {}],
    ['a null requestContext', { requestContext: null }],
  ])(
    'answers a REST-shaped event with multi-value headers and %s in `headers` (not an ALB)',
    async (_what, context) => {
      const request = signedRequest();
      const { requestContext: _dropped, ...rest } = eventOf('rest', request, false) as {
        requestContext: unknown;
      };
      const result = await handler()({ ...rest, ...context } as unknown as LambdaEvent);
      expect(result.statusCode).toBe(200);
      expect(headersOf('rest', result)).toEqual({ 'content-type': 'application/json' });
    },
  );

  it.each(
    (['rest', 'http-api'] as const).flatMap((trigger) =>
      [false, true].map((base64) => [trigger, base64] as const),
    ),
  )(
    'reads an event from %s (base64: %s) without a body as zero bytes, as one with body ""',
    async (trigger, base64) => {
      // REST sends body: null for an empty request, payload 2.0 no body key at all. Zero bytes
      // are verified like any body: a signature of nothing passes, and the empty envelope is
      // malformed; any other signature is refused (not a decoding failure, for base64).
      const cases = [
        [sign(''), 400, 'malformed'],
        [sign(delivery.body, 'other'), 401, 'invalid_signature'],
      ] as const;
      for (const [signature, status, outcome] of cases) {
        const request: Received = {
          method: 'POST',
          path: '/webhooks',
          rawHeaders: Object.entries({ ...delivery.headers, signature }).flat(),
          body: Buffer.alloc(0),
        };
        const event = eventOf(trigger, request, base64);
        expect(event.body ?? undefined).toBeUndefined();
        const answers = await Promise.all(
          [event, { ...event, body: '' }].map(async (each) => {
            const result = await handler()(each);
            return [result.statusCode, JSON.parse(result.body)] as unknown;
          }),
        );
        expect(answers).toEqual([
          [status, { ok: false, outcome }],
          [status, { ok: false, outcome }],
        ]);
      }
    },
  );

  it('reads a body as text when the event has no isBase64Encoded flag', async () => {
    const request = signedRequest();
    const { isBase64Encoded: _flag, ...event } = eventOf('http-api', request, false);
    const result = await handler()(event as LambdaEvent);
    expect([result.statusCode, JSON.parse(result.body)]).toMatchObject([
      200,
      { outcome: 'processed' },
    ]);
  });
});

describe('the types of schoolhooks/lambda', () => {
  it("takes every trigger's event as @types/aws-lambda types it, and answers its result type", () => {
    // A user's code, compiled and never run.
    const compiles = async (receiver: Receiver, context: Context) => {
      const handler = lambdaHandler(receiver);
      const rest: APIGatewayProxyResult = await handler({} as APIGatewayProxyEvent, context);
      const http: APIGatewayProxyStructuredResultV2 = await handler(
        {} as APIGatewayProxyEventV2,
        context,
      );
      const url: APIGatewayProxyStructuredResultV2 = await handler({} as LambdaFunctionURLEvent);
      const alb: ALBResult = await handler({} as ALBEvent, context);
      // @ts-expect-error not an HTTP event
      await handler({ Records: [] });
      return [rest, http, url, alb];
    };
    expectTypeOf(compiles).toBeFunction();
    expectTypeOf(lambdaHandler).returns.returns.resolves.toEqualTypeOf<LambdaResult>();
  });

  it("takes a `tenant` read from any trigger's event: its pathParameters, or its path", () => {
    const compiles = (receiver: Receiver) => {
      lambdaHandler(receiver, { tenant: (event) => event.pathParameters?.tenant });
      // Function URL (rawPath) or ALB (path): no route parameters.
      lambdaHandler(receiver, {
        tenant: (event) => ('httpMethod' in event ? event.path : event.rawPath)?.split('/')[3],
      });
      lambdaHandler(receiver, { tenant: (_event, context) => (context as Context).functionName });
      // @ts-expect-error a tenant is a string, not a number
      lambdaHandler(receiver, { tenant: () => 7 });
      // @ts-expect-error the event is any trigger's: a REST event alone is too narrow
      lambdaHandler(receiver, { tenant: (event: APIGatewayProxyEvent) => event.path });
    };
    expectTypeOf(compiles).toBeFunction();
  });
});
