/**
 * What the Hono and Fetch adapters hand the receiver: @hono/node-server's quirk lives here, in
 * the adapters, not in the core's body reader.
 * @module
 */

import {
  nodeBodyReader,
  requestBodyReader,
  type BodyReader,
  type NodeBodyStream,
  type HeadersInput,
} from '../receiving/request.js';

/** A Node request (`http.IncomingMessage`, or HTTP/2's request) as a server passes it along. */
export interface NodeIncoming extends NodeBodyStream {
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Null until something reads the stream (a listener, a pipe, a web stream made over it). */
  readonly readableFlowing: boolean | null;
}

/**
 * The Node request behind a Fetch `Request`, when the server passed it along and nothing has
 * started reading it: @hono/node-server hands it to its fetch callback as `env.incoming`
 * (`c.env.incoming` in Hono). Reading it directly spares building a full `Request` with a web
 * stream over the socket, which on Node 20 costs more than the whole rest of a delivery.
 * Undefined for any other `env` (Workers bindings, Bun's server, none at all).
 */
export function untouchedNodeRequest(env: unknown): NodeIncoming | undefined {
  if (typeof env !== 'object' || env === null) return undefined;
  const incoming: unknown = (env as { incoming?: unknown }).incoming;
  if (typeof incoming !== 'object' || incoming === null) return undefined;
  const candidate = incoming as Partial<NodeIncoming>;
  if (
    typeof candidate.on !== 'function' ||
    typeof candidate.headers !== 'object' ||
    candidate.headers === null ||
    // Whatever attached a reader (a Request's body stream, a body parser) left it non-null.
    candidate.readableFlowing !== null ||
    candidate.readableEnded !== false
  ) {
    return undefined;
  }
  return candidate as NodeIncoming;
}

/**
 * The headers the receiver reads of a Fetch `Request`: the Node request's behind it when the
 * server passed one along untouched (see {@link untouchedNodeRequest}; Node's plain object is
 * cheaper to read than a `Headers`), else the `Request`'s own.
 */
export function fetchRequestHeaders(request: Request, env: unknown): HeadersInput {
  return untouchedNodeRequest(env)?.headers ?? request.headers;
}

/**
 * The body the receiver reads of a Fetch `Request`: a reader of the Node request behind it when
 * the server passed one along untouched, else of the `Request` itself.
 */
export function fetchRequestBody(request: Request, env: unknown): BodyReader {
  const incoming = untouchedNodeRequest(env);
  return incoming ? nodeBodyReader(incoming) : requestBodyReader(request);
}

/**
 * What the receiver reads of a Fetch `Request`, as the Hono and Fetch adapters read it (and
 * bench/fetch-steps.ts, which cuts the pipeline short after each step).
 */
export function fetchRequestInput(
  request: Request,
  env: unknown,
): { method: string; headers: HeadersInput; body: BodyReader } {
  return {
    method: request.method,
    headers: fetchRequestHeaders(request, env),
    body: fetchRequestBody(request, env),
  };
}
