/**
 * The AWS Lambda adapter: one handler behind API Gateway (REST and HTTP APIs), Function URLs and
 * Application Load Balancers. No AWS package is loaded: the event types are declared here.
 * @module schoolhooks/lambda
 */

import { fromBase64 } from '../src/base64.js';
import type { Receiver } from '../src/receiver.js';

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
}

/** An API Gateway HTTP API (payload 2.0) or Function URL event: what the handler reads of it. */
export interface LambdaV2Event {
  version: string;
  headers?: LambdaHeaders | null | undefined;
  body?: string | null | undefined;
  isBase64Encoded?: boolean | undefined;
  requestContext: { http: { method: string } };
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
): (event: LambdaEvent, context?: unknown) => Promise<LambdaResult> {
  return async function schoolhooksLambdaHandler(event) {
    const v1 = isV2(event) ? undefined : event;
    const multiValue = v1?.multiValueHeaders ?? undefined;
    const { body = null, isBase64Encoded = false } = event;
    const result = await receiver.handle({
      method: v1 ? v1.httpMethod : (event as LambdaV2Event).requestContext.http.method,
      headers: multiValue ?? event.headers ?? {},
      // A reader, so a body that is not base64 after all is answered 400 malformed.
      body: async () => (isBase64Encoded ? fromBase64(body ?? '') : (body ?? '')),
    });
    const json = JSON.stringify(result.body);
    const { status: statusCode } = result;
    // An ALB with multi-value headers on takes them only; every other trigger takes `headers`.
    return multiValue && isAlb(v1)
      ? {
          statusCode,
          multiValueHeaders: { 'content-type': ['application/json'] },
          body: json,
          isBase64Encoded: false,
        }
      : {
          statusCode,
          headers: { 'content-type': 'application/json' },
          body: json,
          isBase64Encoded: false,
        };
  };
}

function isV2(event: LambdaEvent): event is LambdaV2Event {
  // Payload 2.0 carries the method in requestContext.http; REST and ALB events in httpMethod.
  return !('httpMethod' in event);
}

function isAlb(event: LambdaV1Event | undefined): boolean {
  const context = event?.requestContext;
  return typeof context === 'object' && context !== null && 'elb' in context;
}
