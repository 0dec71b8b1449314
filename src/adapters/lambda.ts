/**
 * The AWS Lambda adapter: one handler behind API Gateway (REST and HTTP APIs), Function URLs and
 * Application Load Balancers. No AWS package is loaded: the event types are declared here.
 * @module schoolhooks/lambda
 */

import { defineAdapter } from './adapter-kit.js';
import { fromBase64 } from '../utils/base64.js';
import { MalformedEnvelopeError } from '../errors.js';
import type { Receiver, WebhookRequest } from '../receiving/receiver.js';

/** Headers as Lambda's events carry them, one value per name. */
export type LambdaHeaders = Readonly<Record<string, string | undefined>>;

/** Headers as events with multi-value headers carry them (API Gateway REST, ALB when enabled). */
export type LambdaMultiValueHeaders = Readonly<Record<string, readonly string[] | undefined>>;

/** An API Gateway REST API (payload 1.0) or ALB event: what the handler reads of it. */
export interface LambdaV1Event {
  httpMethod: string;
  headers?: LambdaHeaders | null | undefined;
  multiValueHeaders?: LambdaMultiValueHeaders | null | undefined;
  body?: string | null | undefined;
  isBase64Encoded?: boolean | undefined;
  /** ALB events carry `elb` in it. */
  requestContext?: object | null | undefined;
  /** The route's parameters (API Gateway), e.g. `{ tenant: 'school-a' }` on `/webhooks/school/{tenant}`. */
  pathParameters?: Readonly<Record<string, string | undefined>> | null | undefined;
  /** The request's path: where the tenant is read behind an ALB, which has no route parameters. */
  path?: string | undefined;
}

/** An API Gateway HTTP API (payload 2.0) or Function URL event: what the handler reads of it. */
export interface LambdaV2Event {
  version: string;
  headers?: LambdaHeaders | null | undefined;
  body?: string | null | undefined;
  isBase64Encoded?: boolean | undefined;
  requestContext: { http: { method: string } };
  /** The route's parameters (HTTP API), e.g. `{ tenant: 'school-a' }` on `/webhooks/school/{tenant}`. */
  pathParameters?: Readonly<Record<string, string | undefined>> | null | undefined;
  /** The request's path: where the tenant is read behind a Function URL, which has no route parameters. */
  rawPath?: string | undefined;
}

/** Options of {@link lambdaHandler}. */
export interface LambdaHandlerOptions {
  /**
   * The tenant the event names, when one function serves many schools (docs/tenants.md); required
   * when the receiver's `secret` is a lookup. Behind API Gateway, from the route's
   * `pathParameters`; behind a Function URL or an ALB, which have none, from the path.
   *
   * @example
   * ```ts
   * export const handler = lambdaHandler(receiver, { tenant: (event) => event.pathParameters?.tenant });
   * // Function URL (`rawPath`) or ALB (`path`): /webhooks/school/<tenant>
   * lambdaHandler(receiver, {
   *   tenant: (event) => ('httpMethod' in event ? event.path : event.rawPath)?.split('/')[3],
   * });
   * ```
   */
  tenant?: ((event: LambdaEvent, context?: unknown) => string | undefined) | undefined;
}

/** Any event {@link lambdaHandler} answers. */
export type LambdaEvent = LambdaV1Event | LambdaV2Event;

/** The answer, in the shape of the event it answers (multi-value headers for an ALB that sent them). */
export interface LambdaResult {
  statusCode: number;
  headers?: Record<string, string>;
  multiValueHeaders?: Record<string, string[]>;
  body: string;
  isBase64Encoded: false;
}

const lambdaAdapter = defineAdapter<[event: LambdaEvent, context?: unknown], LambdaResult>({
  rawBodyFix: 'hand lambdaHandler the event as the trigger sent it, its `body` untouched',
  method: (event) => (isV2(event) ? event.requestContext.http.method : event.httpMethod),
  headers: (event) => (isV2(event) ? undefined : event.multiValueHeaders) ?? event.headers ?? {},
  body: bodyOf,
  write: ({ status: statusCode, body }, headers, event) => {
    // The trigger read the whole body and owns the client's connection: a hop-by-hop header
    // (the `connection: close` of a 413) is not the function's to send.
    if (headers.connection !== undefined) delete headers.connection;
    const json = JSON.stringify(body);
    // An ALB with multi-value headers on takes them only; every other trigger takes `headers`.
    return !isV2(event) && event.multiValueHeaders && isAlb(event)
      ? { statusCode, multiValueHeaders: multiValued(headers), body: json, isBase64Encoded: false }
      : { statusCode, headers, body: json, isBase64Encoded: false };
  },
});

/**
 * Answer webhook deliveries in a Lambda function, behind any HTTP trigger. A base64-encoded body
 * (`isBase64Encoded`, as API Gateway and ALB send binary or any body, depending on their set-up)
 * is decoded to the bytes the platform signed; headers are read in any letter case.
 *
 * @example
 * ```ts
 * import { createReceiver } from 'schoolhooks';
 * import { lambdaHandler } from 'schoolhooks/lambda';
 *
 * const receiver = createReceiver({ secret: process.env.SCHOOL_WEBHOOK_SECRET! });
 * receiver.on('PaymentCompleted', async (event) => grantAccess(event.data.payment));
 *
 * export const handler = lambdaHandler(receiver);
 * ```
 */
export function lambdaHandler(
  receiver: Receiver,
  options?: LambdaHandlerOptions,
): (event: LambdaEvent, context?: unknown) => Promise<LambdaResult> {
  return lambdaAdapter(receiver, options);
}

function bodyOf({ body, isBase64Encoded }: LambdaEvent): WebhookRequest['body'] {
  if (!isBase64Encoded) return body ?? '';
  // A reader, decoding once the method and content type passed; a body that is not base64 after
  // all is answered 400 malformed, saying so.
  return async () => {
    try {
      return fromBase64(body ?? '');
    } catch (cause) {
      throw new MalformedEnvelopeError(
        'the event is flagged isBase64Encoded but its body is not base64',
        { cause },
      );
    }
  };
}

function multiValued(headers: Record<string, string>): Record<string, string[]> {
  const values: Record<string, string[]> = {};
  for (const name in headers) values[name] = [headers[name]!];
  return values;
}

function isV2(event: LambdaEvent): event is LambdaV2Event {
  // Payload 2.0 carries the method in requestContext.http; REST and ALB events in httpMethod.
  return !('httpMethod' in event);
}

function isAlb(event: LambdaV1Event): boolean {
  const context = event.requestContext;
  return typeof context === 'object' && context !== null && 'elb' in context;
}
