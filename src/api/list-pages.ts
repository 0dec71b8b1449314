/**
 * Reads a list operation page by page (docs/platform.md#list-operations) as an async iterable:
 * every page until the last, `429 Rate` waited out, each item checked on its own.
 * @module
 */

import type { z } from 'zod';
import { API_CLIENT_DEFAULTS } from '../defaults.js';
import type { KnownOutput } from '../events/known-output.js';
import { InvalidListItemsError, RateLimitError, type InvalidListItem } from './errors.js';
import type { ListKind, ListOperation, ListOptions } from './list-operations.js';
import { isPositiveInteger, listQuery, matchesNothing, type QueryFilters } from './list-query.js';
import { listPageResponseSchema, type ListPage } from './list-schemas.js';
import { rateLimitDelay, RETRY_ON, retryDelay, sleep } from './retry-delay.js';
import { issueMessages, readBody, request, type Client } from './transport.js';

/** The most items a page may hold (docs/platform.md#list-operations). */
const MAX_TAKE = 1000;
/** How many invalid items an {@link InvalidListItemsError}'s message names; `items` has them all. */
const NAMED_IN_MESSAGE = 5;

/** A list call's options other than its filters, checked, defaults applied. */
interface Paging {
  readonly take: number;
  readonly signal: AbortSignal | undefined;
  readonly maxRateLimitWaitMs: number;
  readonly onInvalidItem: ((item: InvalidListItem) => void) | undefined;
}

/**
 * Every item of `operation` that matches `options`. The options are checked now (a TypeError);
 * nothing is sent until the iteration starts. Each page is fetched when the one before is used
 * up; an item seen on an earlier page (the list moved while it was read) is not yielded again.
 */
export function listItems<S extends z.ZodType, O extends ListOptions>(
  client: Client,
  operation: ListOperation<S, O>,
  options: O | undefined,
): AsyncGenerator<KnownOutput<S>, void, undefined> {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError('the options of a list must be an object');
  }
  const given = options ?? ({} as O);
  const filters = operation.filters(given);
  return readAll(client, operation, filters, paging(given));
}

function paging({ take, signal, maxRateLimitWaitMs, onInvalidItem }: ListOptions): Paging {
  const pageSize = take ?? API_CLIENT_DEFAULTS.listTake;
  if (!isPositiveInteger(pageSize) || pageSize > MAX_TAKE) {
    throw new TypeError(`take must be an integer from 1 to ${MAX_TAKE}`);
  }
  const maxWait = maxRateLimitWaitMs ?? API_CLIENT_DEFAULTS.listRateLimitWaitMs;
  if (typeof maxWait !== 'number' || !(maxWait >= 0)) {
    throw new TypeError('maxRateLimitWaitMs must be a non-negative number of milliseconds');
  }
  if (onInvalidItem !== undefined && typeof onInvalidItem !== 'function') {
    throw new TypeError('onInvalidItem must be a function');
  }
  return { take: pageSize, signal, maxRateLimitWaitMs: maxWait, onInvalidItem };
}

async function* readAll<S extends z.ZodType, O extends ListOptions>(
  client: Client,
  operation: ListOperation<S, O>,
  filters: QueryFilters,
  settings: Paging,
): AsyncGenerator<KnownOutput<S>, void, undefined> {
  if (matchesNothing(filters)) return;
  const invalid = new InvalidItems(operation.kind, settings.onInvalidItem);
  const seen = new Set<unknown>();
  for (let skip = 0; ;) {
    const path = `${operation.path}?${listQuery(filters, skip, settings.take)}`;
    const page = await fetchPage(client, path, settings);
    for (const [index, raw] of page.items.entries()) {
      const result = operation.schema.safeParse(raw);
      if (!result.success) {
        const id = idOf(raw, operation.idField);
        invalid.add({
          kind: operation.kind,
          id,
          position: skip + index,
          issues: issueMessages(result.error),
        });
        continue;
      }
      const item = result.data as KnownOutput<S>;
      const id = (item as Record<string, unknown>)[operation.idField];
      if (seen.has(id)) continue;
      seen.add(id);
      yield item;
    }
    skip += page.items.length;
    if (isLastPage(page, skip, settings.take)) break;
  }
  invalid.throwIfAny();
}

/**
 * One page, asked again as the platform's answers allow: a `429 Rate` is waited out until its
 * `retryAfter` while the page's waits stay within `maxRateLimitWaitMs` (not counted against
 * `retries`); a 5xx or a lost connection is retried `retries` times with backoff (a list only
 * reads, so asking again is safe); anything else is thrown at once.
 */
async function fetchPage(client: Client, path: string, settings: Paging): Promise<ListPage> {
  const { signal, maxRateLimitWaitMs } = settings;
  const { sellerId, schoolId } = client.view;
  let failures = 0;
  let rateLimits = 0;
  let waited = 0;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const { status, text } = await request(
        client,
        { method: 'GET', path },
        { sellerId, schoolId },
        signal,
      );
      return readBody(status, text, listPageResponseSchema).payload;
    } catch (error) {
      if (signal?.aborted) throw error;
      let delay: number | undefined;
      if (error instanceof RateLimitError) {
        delay = rateLimitDelay(error, rateLimits);
        rateLimits += 1;
        waited += delay;
        if (waited > maxRateLimitWaitMs) throw error;
      } else {
        delay =
          failures < client.retries ? retryDelay(error, failures, RETRY_ON.createOrGet) : undefined;
        failures += 1;
        if (delay === undefined) throw error;
      }
      await sleep(delay, signal);
    }
  }
}

/**
 * Whether `page` ends the listing: it says it is the last, or (when it does not say) the items
 * read reach its `count`, or it is empty or short.
 */
function isLastPage(page: ListPage, read: number, take: number): boolean {
  if (page.items.length === 0) return true;
  if (typeof page.isLast === 'boolean') return page.isLast;
  if (typeof page.count === 'number') return read >= page.count;
  return page.items.length < take;
}

/** The id an item that failed its schema still shows, if any. */
function idOf(raw: unknown, field: string): number | string | undefined {
  if (typeof raw !== 'object' || raw === null) return undefined;
  const id = (raw as Record<string, unknown>)[field];
  return typeof id === 'number' || typeof id === 'string' ? id : undefined;
}

/** The items that failed their schema: passed to `onInvalidItem`, or gathered and thrown at the end. */
class InvalidItems {
  readonly #kind: ListKind;
  readonly #onInvalidItem: ((item: InvalidListItem) => void) | undefined;
  readonly #items: InvalidListItem[] = [];

  constructor(kind: ListKind, onInvalidItem: ((item: InvalidListItem) => void) | undefined) {
    this.#kind = kind;
    this.#onInvalidItem = onInvalidItem;
  }

  add(item: InvalidListItem): void {
    if (this.#onInvalidItem) this.#onInvalidItem(Object.freeze(item));
    else this.#items.push(Object.freeze(item));
  }

  throwIfAny(): void {
    const items = this.#items;
    if (items.length === 0) return;
    const named = items.slice(0, NAMED_IN_MESSAGE).map(describeItem);
    const more = items.length > named.length ? `; and ${items.length - named.length} more` : '';
    throw new InvalidListItemsError(
      `${items.length} ${this.#kind} item(s) of the list did not match the expected shape: ${named.join('; ')}${more}`,
      {
        status: 200,
        code: 'invalid_items',
        messages: items.map(describeItem),
        items,
      },
    );
  }
}

function describeItem({ kind, id, position, issues }: InvalidListItem): string {
  const which = id === undefined ? `${kind} at position ${position}` : `${kind} ${id}`;
  return `${which} (${issues.join(', ')})`;
}
