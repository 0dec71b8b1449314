/**
 * Reads a list operation page by page (docs/platform.md#list-operations) as an async iterable:
 * every page until the last, `429 Rate` waited out, each item checked on its own.
 * @module
 */

import type { z } from 'zod';
import { API_CLIENT_DEFAULTS } from '../defaults.js';
import { PLATFORM_LIMITS } from '../platform/platform-contract.js';
import type { KnownOutput } from '../platform/events/known-output.js';
import { InvalidListItemsError, RateLimitError, type InvalidListItem } from './errors.js';
import type { ListKind, ListOperation, ListOptions } from './list-operations.js';
import {
  isPositiveInteger,
  listQuery,
  matchesNothing,
  type QueryFilters,
  type QueryValue,
} from './list-query.js';
import { listPageResponseSchema, type ListPage } from './list-schemas.js';
import { rateLimitDelay, RETRY_ON, retryDelay, sleep } from './retry-delay.js';
import { issueMessages, readBody, request, type Client } from './transport.js';

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
 * A listing with both ends of its date range is read range by range, never by offset.
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
  if (!isPositiveInteger(pageSize) || pageSize > PLATFORM_LIMITS.maxListTake) {
    throw new TypeError(`take must be an integer from 1 to ${PLATFORM_LIMITS.maxListTake}`);
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
  const reader = new PageReader(client, operation, settings);
  const range = closedRange(filters[operation.rangeFilter]);
  if (range === undefined) yield* reader.byOffset(filters);
  else yield* reader.byRange(filters, range);
  reader.invalid.throwIfAny();
}

/**
 * The pages of one listing, each item checked against its schema and yielded once (an item seen
 * on an earlier page, or in an overlapping range, is not yielded again).
 */
class PageReader<S extends z.ZodType, O extends ListOptions> {
  readonly invalid: InvalidItems;
  readonly #client: Client;
  readonly #operation: ListOperation<S, O>;
  readonly #settings: Paging;
  readonly #seen = new Set<unknown>();
  readonly #seenInvalid = new Set<unknown>();

  constructor(client: Client, operation: ListOperation<S, O>, settings: Paging) {
    this.#client = client;
    this.#operation = operation;
    this.#settings = settings;
    this.invalid = new InvalidItems(operation.kind, settings.onInvalidItem);
  }

  /**
   * Every item, by `skip` over the list: what a listing without a date range can do. An item that
   * leaves the list while it is read shifts every later one back, and the one at the next page
   * boundary is not read; {@link byRange} has no such hole.
   */
  async *byOffset(filters: QueryFilters): AsyncGenerator<KnownOutput<S>, void, undefined> {
    for (let skip = 0; ;) {
      const page = await this.#page(filters, skip);
      yield* this.#items(page, skip);
      skip += page.items.length;
      if (isLastPage(page, skip, this.#settings.take)) return;
    }
  }

  /**
   * Every item of a date range, oldest part first, without offsets: a range whose page says it
   * holds more than one page (its `count`), or comes back full, is split in two halves that share
   * their middle instant, until each fits one page. An item that leaves or enters the list
   * meanwhile moves no other past a page boundary. A range one millisecond wide that still holds
   * more than a page is read by offset, the best the list allows.
   */
  async *byRange(
    filters: QueryFilters,
    whole: readonly [number, number],
  ): AsyncGenerator<KnownOutput<S>, void, undefined> {
    const { rangeFilter } = this.#operation;
    const { take } = this.#settings;
    const pending: (readonly [number, number])[] = [whole];
    for (let range = pending.pop(); range !== undefined; range = pending.pop()) {
      const [from, to] = range;
      const narrowed = { ...filters, [rangeFilter]: { from: iso(from), to: iso(to) } };
      const page = await this.#page(narrowed, 0);
      const more =
        page.items.length >= take || (typeof page.count === 'number' && page.count > take);
      if (!more) {
        yield* this.#items(page, 0);
      } else if (to - from >= 2) {
        const middle = Math.floor((from + to) / 2);
        // The later half first onto the stack: the earlier one is read next.
        pending.push([middle, to], [from, middle]);
      } else {
        yield* this.byOffset(narrowed);
      }
    }
  }

  /** The page at `skip` of the listing with `filters`. */
  #page(filters: QueryFilters, skip: number): Promise<ListPage> {
    const path = `${this.#operation.path}?${listQuery(filters, skip, this.#settings.take)}`;
    return fetchPage(this.#client, path, this.#settings);
  }

  /** The page's items that match their schema and were not yielded before. */
  *#items(page: ListPage, skip: number): Generator<KnownOutput<S>, void, undefined> {
    const operation = this.#operation;
    for (const [index, raw] of page.items.entries()) {
      const result = operation.schema.safeParse(raw);
      if (!result.success) {
        const id = idOf(raw, operation.idField);
        // Ranges share their middle instant: an item there is read twice, but told once.
        const seenAs = id ?? JSON.stringify(raw);
        if (this.#seenInvalid.has(seenAs)) continue;
        this.#seenInvalid.add(seenAs);
        this.invalid.add({
          kind: operation.kind,
          id,
          position: skip + index,
          issues: issueMessages(result.error),
        });
        continue;
      }
      const item = result.data as KnownOutput<S>;
      const id = (item as Record<string, unknown>)[operation.idField];
      if (this.#seen.has(id)) continue;
      this.#seen.add(id);
      yield item;
    }
  }
}

/** A date range filter with both ends, in ms since the epoch; undefined for any other. */
function closedRange(filter: QueryValue): readonly [number, number] | undefined {
  if (typeof filter !== 'object' || filter === null || Array.isArray(filter)) return undefined;
  const { from, to } = filter as { readonly from?: QueryValue; readonly to?: QueryValue };
  if (typeof from !== 'string' || typeof to !== 'string') return undefined;
  return [Date.parse(from), Date.parse(to)];
}

function iso(time: number): string {
  return new Date(time).toISOString();
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
