/**
 * Reading a request: one header from whatever header object an adapter has, and the raw body,
 * never past the receiver's limit: the receiver calls
 * a {@link BodyReader} only once the method and content type passed, and a body announced or
 * found to be larger than `maxBodyBytes` is answered 413 without being buffered whole.
 * @module
 */

import type { RawBody } from '../platform/signature.js';

/** A Fetch `Headers`-like object. */
export interface HeadersLike {
  /** The header's value, or null when it is absent; `name` in any letter case. */
  get(name: string): string | null;
}

/** Headers as a Fetch `Headers`, Node's `IncomingHttpHeaders`, or a plain object in any letter case. */
export type HeadersInput =
  HeadersLike | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The value of header `name` (given in lowercase), or undefined. Node joins repeated headers or
 * gives an array; an array yields its first value.
 */
export function getHeader(
  headers: HeadersInput | null | undefined,
  name: string,
): string | undefined {
  if (!headers || typeof headers !== 'object') return undefined;
  if (typeof (headers as HeadersLike).get === 'function') {
    return (headers as HeadersLike).get(name) ?? undefined;
  }
  const record = headers as Readonly<Record<string, unknown>>;
  let value = record[name];
  if (value === undefined) {
    for (const key of Object.keys(record)) {
      if (key.length === name.length && key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  if (Array.isArray(value)) value = value[0];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Reads the raw body when the receiver asks for it. It may stop once it holds more than `limit`
 * bytes (the receiver then answers 413), and resolves to undefined when the bytes are gone (a
 * body parser consumed them).
 */
export type BodyReader = (limit: number) => Promise<RawBody | undefined>;

/** A Node request stream (`http.IncomingMessage`), typed structurally so the core needs no Node types. */
export interface NodeBodyStream {
  /** True once something (a body parser) read the stream to its end. */
  readonly readableEnded: boolean;
  /** Listens to the stream's chunks. */
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  /** Listens to the stream's end, or its closing. */
  on(event: 'end' | 'close', listener: () => void): unknown;
  /** Listens to the stream's errors. */
  on(event: 'error', listener: (error: Error) => void): unknown;
}

/**
 * A {@link BodyReader} over a Node request stream.
 *
 * @example
 * ```ts
 * const result = await receiver.handle({ method: req.method, headers: req.headers, body: nodeBodyReader(req) });
 * ```
 */
export function nodeBodyReader(stream: NodeBodyStream): BodyReader {
  return (limit) =>
    new Promise((resolve, reject) => {
      if (stream.readableEnded) return resolve(undefined);
      const chunks: Uint8Array[] = [];
      let size = 0;
      let settled = false;
      // Listeners, not `for await`: leaving an async iterator early destroys the stream, and with
      // it the socket the answer must go out on. They stay attached once settled (the request is
      // done with soon after) and do nothing then: past the limit the rest of the body flows to
      // the ignoring `data` listener and is dropped as it arrives, never buffered, and a late
      // error or close finds a listener that has nothing left to tell.
      stream.on('data', (chunk) => {
        if (settled) return;
        chunks.push(chunk);
        size += chunk.byteLength;
        if (size > limit) settle();
      });
      stream.on('end', () => settle());
      stream.on('error', (error) => settle(error));
      stream.on('close', () => {
        // Every request closes, most long after their body ended: no Error (and its stack) then.
        if (!settled) settle(new Error('the request closed before its body ended'));
      });
      function settle(error?: Error): void {
        if (settled) return;
        settled = true;
        if (error) reject(error);
        else resolve(concat(chunks, size));
      }
    });
}

/**
 * A {@link BodyReader} over a Fetch `Request` (Hono's `c.req.raw`, Bun, Deno, Workers, Next.js).
 *
 * A body whose Content-Length is within the limit is read with `arrayBuffer()`, each runtime's
 * fastest way (docs/maintainers/benchmarks.md: 1.3× to 4× cheaper than a stream reader on Bun, Deno and
 * @hono/node-server). It is bounded all the same: every HTTP server frames a body by its
 * Content-Length and hands on no byte past it (Node, Bun and Deno checked; a request that also
 * says `Transfer-Encoding` is refused by them, and is read here as a stream). A body with no
 * Content-Length is read with a stream reader and never past the chunk that crosses the limit.
 *
 * @example
 * ```ts
 * const result = await receiver.handle({ method: request.method, headers: request.headers, body: requestBodyReader(request) });
 * ```
 */
export function requestBodyReader(request: Request): BodyReader {
  return (limit) => {
    if (request.bodyUsed) return Promise.resolve(undefined);
    const { headers } = request;
    const length = declaredLength(headers);
    // `request.body` is not touched on this path: on @hono/node-server it builds a whole second
    // Request with a web stream over the socket, which costs more than the rest of a delivery.
    if (length !== undefined && length <= limit && !headers.has('transfer-encoding')) {
      // A Request built in code may understate its body: the bytes found are what counts, and
      // more than the limit is still answered 413 (docs/decisions.md, "Reading a Fetch body").
      return request.arrayBuffer().then(bytesOf);
    }
    return readAtMost(request.body, limit);
  };
}

function bytesOf(buffer: ArrayBuffer): Uint8Array {
  return new Uint8Array(buffer);
}

/** The chunks of `body` up to and including the one that crosses `limit`. */
async function readAtMost(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
): Promise<Uint8Array> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (size <= limit) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.byteLength;
  }
  // What is left past the limit is not cancelled: cancelling a stream made by Node's
  // Readable.toWeb destroys the socket the 413 must go out on. The server drops the rest.
  reader.releaseLock();
  return concat(chunks, size);
}

/** The Content-Length a request announces, or undefined when it has none (chunked) or a bad one. */
export function declaredLength(headers: HeadersInput): number | undefined {
  const value = getHeader(headers, 'content-length');
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}

function concat(chunks: readonly Uint8Array[], size: number): Uint8Array {
  const [first] = chunks;
  if (first !== undefined && chunks.length === 1) return first;
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return bytes;
}
