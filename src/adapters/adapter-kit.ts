/**
 * The adapter kit: what every adapter of schoolhooks is made of, and what an adapter for any other
 * framework needs. An adapter says how its framework reads a request and writes an answer;
 * {@link defineAdapter} applies the rules they share once: the answer is the receiver's JSON with
 * {@link answerHeaders} (the connection closed after a 413), the body is read by the receiver
 * only once the method and content type passed and never past `receiver.maxBodyBytes`, and a body
 * a framework's parser took is answered 500 `body_unavailable` with this framework's fix in the
 * `ConfigError` (README: What each delivery is answered).
 * @module
 */

import type { ServerResponse } from 'node:http';
import { ConfigError } from '../errors.js';
import type { HeadersInput } from '../receiving/request.js';
import { OUTCOME_STATUS } from '../receiving/outcome.js';
import type { Receiver, WebhookRequest, WebhookResult } from '../receiving/receiver.js';

/**
 * The headers an answer with `status` needs besides its content type: after a 413 the connection
 * ends (`connection: close`), undefined otherwise. The body may still be arriving, and reading it
 * only to drop it would hold the socket for as long as the client keeps sending (a server's
 * default `requestTimeout` is 5 minutes). The platform opens a new connection for its retry.
 *
 * @example
 * ```ts
 * closingHeaders(413); // { connection: 'close' }
 * closingHeaders(200); // undefined
 * ```
 */
export function closingHeaders(status: number): Record<string, string> | undefined {
  return status === OUTCOME_STATUS.too_large ? { connection: 'close' } : undefined;
}

/**
 * The headers of an answer with `status`: JSON, and {@link closingHeaders}. A fresh object each
 * time, which the caller may add to (a `content-length`).
 *
 * @example
 * ```ts
 * const { status, body } = await receiver.handle({ method, headers, body: rawBytes });
 * return new Response(JSON.stringify(body), { status, headers: answerHeaders(status) });
 * ```
 */
export function answerHeaders(status: number): Record<string, string> {
  // A literal for the common answer: no spread on the hot path.
  return status === OUTCOME_STATUS.too_large
    ? { 'content-type': 'application/json', connection: 'close' }
    : { 'content-type': 'application/json' };
}

/**
 * What a framework hands an adapter for one request: one argument (Hono's context, a Lambda
 * event) or two (Node's request and response, a Fetch `Request` and the server's `env`).
 */
export type AdapterArgs = readonly [input: unknown, extra?: unknown];

/** How one framework reads a request and writes an answer: the part of an adapter that is its own. */
export interface AdapterDefinition<Args extends AdapterArgs, Output> {
  /**
   * How to keep the raw body on this framework, as a sentence: the fix a `body_unavailable`
   * `ConfigError` names when a body parser took the bytes before the receiver.
   */
  readonly rawBodyFix: string;
  /** The request's method. */
  method(...args: Args): string | undefined;
  /** The request's headers, in any letter case (a plain object, Node's headers, a `Headers`). */
  headers(...args: Args): HeadersInput;
  /**
   * The raw body: the bytes as received (`Uint8Array`, `string`, `ArrayBuffer`), or better a
   * reader of the request stream (`nodeBodyReader`, `requestBodyReader`), which the receiver calls
   * only once the method and content type passed, with `receiver.maxBodyBytes` as its limit. A
   * body parser's leftovers (undefined, a parsed object) are answered 500 `body_unavailable`.
   */
  body(...args: Args): WebhookRequest['body'];
  /**
   * Write the answer: `answer.status`, the `headers` (from {@link answerHeaders}, a fresh object),
   * and `answer.body` as JSON. A framework that serialises JSON itself keeps its content type
   * from `headers` all the same.
   */
  write(answer: WebhookResult, headers: Record<string, string>, ...args: Args): Output;
}

/** What every adapter takes besides the receiver. */
export interface AdapterOptions<Args extends AdapterArgs> {
  /**
   * The tenant the request's route names, when one endpoint serves many schools
   * (docs/tenants.md): read from the route (`(req) => req.params.tenant`). Its secrets verify the
   * delivery, its keys are apart from every other tenant's, handlers see it as `ctx.tenant`.
   * Required when the receiver's `secret` is a lookup: without it the adapter throws a
   * `ConfigError` when it is made.
   */
  readonly tenant?: ((...args: Args) => string | undefined) | undefined;
}

/** An adapter: given a receiver, the framework's handler of webhook deliveries. */
export type Adapter<Args extends AdapterArgs, Output> = (
  receiver: Receiver,
  options?: AdapterOptions<Args>,
) => (...args: Args) => Promise<Output>;

/**
 * Make an adapter of a framework's reads and write. The rules every adapter shares are applied
 * here, once: `rawBodyFix` goes with each request, so the receiver's `body_unavailable` error
 * names this framework's fix; the answer's headers are {@link answerHeaders}. Per request it
 * costs what a hand-written adapter does: one request object, the receiver's promise, no other.
 *
 * @example
 * ```ts
 * import { defineAdapter, nodeBodyReader } from 'schoolhooks';
 *
 * // A framework whose handlers get (ctx) with ctx.req, a Node request, and ctx.reply(status, headers, text).
 * export const myFrameworkHandler = defineAdapter({
 *   rawBodyFix: 'register the handler before any body parser',
 *   method: (ctx: MyContext) => ctx.req.method,
 *   headers: (ctx) => ctx.req.headers,
 *   body: (ctx) => nodeBodyReader(ctx.req),
 *   write: ({ status, body }, headers, ctx) => ctx.reply(status, headers, JSON.stringify(body)),
 * });
 * app.post('/webhooks/school', myFrameworkHandler(receiver));
 * ```
 */
export function defineAdapter<Args extends AdapterArgs, Output>(
  definition: AdapterDefinition<Args, Output>,
): Adapter<Args, Output> {
  // Called with two arguments whatever the framework passes: no rest array per request.
  const { rawBodyFix, method, headers, body, write } = definition as unknown as Definition<Output>;
  return (receiver, options) => {
    const tenantOf = options?.tenant as ((input: unknown, extra: unknown) => unknown) | undefined;
    if (tenantOf === undefined && receiver.needsTenant) throw tenantMissing();
    async function schoolhooksAdapter(input: unknown, extra: unknown): Promise<Output> {
      // The one request object of a delivery: what every adapter reads is read here, once.
      const answer = await receiver.handle({
        method: method(input, extra),
        headers: headers(input, extra),
        body: body(input, extra),
        rawBodyFix,
        // Read by the receiver, which answers a throw 404 `unknown_tenant` and tells onError why.
        tenant:
          tenantOf === undefined ? undefined : () => tenantOf(input, extra) as string | undefined,
      });
      return write(answer, answerHeaders(answer.status), input, extra);
    }
    return schoolhooksAdapter as unknown as (...args: Args) => Promise<Output>;
  };
}

/** A receiver whose secret is looked up per tenant, given to an adapter that reads no tenant. */
function tenantMissing(): ConfigError {
  return new ConfigError(
    "the receiver's secret is looked up per tenant, so the adapter must read each request's " +
      'tenant from its route: pass it a `tenant` option, e.g. `{ tenant: (req) => req.params.tenant }` ' +
      '(docs/tenants.md)',
  );
}

/** {@link AdapterDefinition} as the kit calls it: always with both arguments. */
interface Definition<Output> {
  readonly rawBodyFix: string;
  method(input: unknown, extra: unknown): string | undefined;
  headers(input: unknown, extra: unknown): HeadersInput;
  body(input: unknown, extra: unknown): WebhookRequest['body'];
  write(
    answer: WebhookResult,
    headers: Record<string, string>,
    input: unknown,
    extra: unknown,
  ): Output;
}

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
