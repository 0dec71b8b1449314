/**
 * What `redisStore` writes to Redis: the values at a key, the two Lua scripts of a claim and its
 * settle, and how a claim's reply reads.
 *
 * One script takes everything a claim asks for (its key, its records, its entity's version) or
 * nothing; one more ends all of it. On one Redis a claim is one script whatever it holds; on a
 * Cluster, where a script may touch one hash slot only, it is one script per slot its keys fall in
 * (docs/stores.md#redis).
 * @module
 */

import { createHash } from 'node:crypto';
import { StoreUnavailableError } from '../errors.js';

/**
 * A Lua script run with EVALSHA, falling back to EVAL when Redis does not know it yet. Sent
 * by hand rather than with `defineCommand`, which would add methods to the caller's client.
 */
export interface Script {
  readonly lua: string;
  readonly sha: string;
}

function script(lua: string): Script {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

/** The value at a key (or a record) while a claim holds it: `L:<token>`. */
export const LEASE = 'L:';
/** The value at a key (or a record) once done: `D:<fingerprint>`. */
export const DONE = 'D:';

/**
 * A claim, or the part of it in one hash slot. KEYS: the key (when ARGV[1] is 1), then ARGV[2]
 * records, then (when ARGV[3] is 1) the entity's version and its lease. ARGV[4] the lease value;
 * ARGV[5] leaseMs; ARGV[6] the latest moment, on Redis's clock in ms, at which the caller still
 * waits for the answer; ARGV[7] the version; ARGV[8] how long the version is kept, in ms.
 *
 * Replies `{ outcome, seconds, microseconds, … }` (TIME's two halves): `late`; `held`, what
 * (`key`, `record` or `entity`) and the value found (a key done is `held` too, with its `D:`
 * value); or `claimed`, whether the version is `superseded` (1: the entity was not taken), and
 * each record's value before the claim (`''`: taken now; a `D:` value: done before).
 *
 * The version is taken at claim time: the entity's lease keeps the version before the claim
 * (`L:<token>|<version>|<its ttl>`) and the claim's version is written as the newest at once, so
 * a claim whose process dies mid-handler leaves its version standing. While a lease holds the
 * entity, the version it keeps is what was applied before: an older one than that is
 * superseded, any other waits (`held`). A lease of the layout before (`L:<token>`, no version)
 * means the version key holds what was applied.
 *
 * The deadline check makes a claim that reaches Redis after the caller gave up (ioredis re-sends
 * commands that were in flight when a connection dropped; a paused server reads its socket late)
 * write nothing. Nothing is written unless everything is free.
 */
export const CLAIM = script(`
local time = redis.call('TIME')
if time[1] * 1000 + math.floor(time[2] / 1000) > tonumber(ARGV[6]) then
  return { 'late', time[1], time[2] }
end
local n = tonumber(ARGV[1])
local records = tonumber(ARGV[2])
if n == 1 then
  local value = redis.call('GET', KEYS[1])
  if value then return { 'held', time[1], time[2], 'key', value } end
end
local found = {}
for i = 1, records do
  local value = redis.call('GET', KEYS[n + i])
  if value and string.sub(value, 1, 2) ~= 'D:' then
    return { 'held', time[1], time[2], 'record', value }
  end
  found[i] = value or ''
end
local superseded = 0
local versionKey, leaseKey = KEYS[n + records + 1], KEYS[n + records + 2]
if ARGV[3] == '1' then
  local lease = redis.call('GET', leaseKey)
  local newest
  if lease then
    newest = string.match(lease, '^L:[^|]*|([^|]*)|') or redis.call('GET', versionKey)
  else
    newest = redis.call('GET', versionKey)
  end
  if newest and newest ~= '' and tonumber(newest) > tonumber(ARGV[7]) then
    superseded = 1
  elseif lease then
    return { 'held', time[1], time[2], 'entity', lease }
  end
end
if n == 1 then redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5]) end
for i = 1, records do
  if found[i] == '' then redis.call('SET', KEYS[n + i], ARGV[4], 'PX', ARGV[5]) end
end
if ARGV[3] == '1' and superseded == 0 then
  local before = redis.call('GET', versionKey) or ''
  local ttl = before == '' and -2 or redis.call('PTTL', versionKey)
  redis.call('SET', leaseKey, ARGV[4] .. '|' .. before .. '|' .. ttl, 'PX', ARGV[5])
  redis.call('SET', versionKey, ARGV[7], 'PX', ARGV[8])
end
return { 'claimed', time[1], time[2], superseded, unpack(found) }
`);

/**
 * A claim's settle, or the part of it in one hash slot: KEYS as {@link CLAIM}'s (the records the
 * claim took, and the entity when it took it). ARGV[1..3] as CLAIM's; ARGV[4] the claim's lease
 * value; ARGV[5] `complete` or `release`; ARGV[6] the key's done value and ARGV[7] its ttl;
 * ARGV[8] the records' done value and ARGV[9] their ttl.
 *
 * Acts only on what the lease still holds. `complete` marks the key and the records done and
 * frees the entity, keeping the version the claim wrote; `release` deletes them and gives the
 * entity back the version it had before the claim (with the ttl it had left then).
 */
export const SETTLE = script(`
local n = tonumber(ARGV[1])
local records = tonumber(ARGV[2])
local complete = ARGV[5] == 'complete'
if n == 1 and redis.call('GET', KEYS[1]) == ARGV[4] then
  if complete then redis.call('SET', KEYS[1], ARGV[6], 'PX', ARGV[7])
  else redis.call('DEL', KEYS[1]) end
end
for i = 1, records do
  if redis.call('GET', KEYS[n + i]) == ARGV[4] then
    if complete then redis.call('SET', KEYS[n + i], ARGV[8], 'PX', ARGV[9])
    else redis.call('DEL', KEYS[n + i]) end
  end
end
if ARGV[3] == '1' then
  local versionKey, leaseKey = KEYS[n + records + 1], KEYS[n + records + 2]
  local lease = redis.call('GET', leaseKey)
  local mine = ARGV[4] .. '|'
  if lease and string.sub(lease, 1, #mine) == mine then
    redis.call('DEL', leaseKey)
    if not complete then
      local before, ttl = string.match(lease, '|([^|]*)|(-?%d+)$')
      if before ~= '' and tonumber(ttl) > 0 then
        redis.call('SET', versionKey, before, 'PX', ttl)
      else
        redis.call('DEL', versionKey)
      end
    end
  end
end
return 1
`);

/** What a claim script answered. */
export type ClaimReply =
  | { readonly outcome: 'late'; readonly redisNow: number }
  | {
      readonly outcome: 'held';
      readonly redisNow: number;
      readonly what: 'key' | 'record' | 'entity';
      readonly value: string;
    }
  | {
      readonly outcome: 'claimed';
      readonly redisNow: number;
      readonly superseded: boolean;
      /** Each record's value before the claim: `''` when the claim took it. */
      readonly records: readonly string[];
    };

const HELD_WHAT = new Set(['key', 'record', 'entity']);

/** The claim script's reply, or a `StoreUnavailableError` for one it never gives. */
export function parseClaimReply(reply: unknown): ClaimReply {
  if (Array.isArray(reply)) {
    const [outcome, seconds, micros, ...rest] = reply as unknown[];
    if (typeof seconds === 'string' && typeof micros === 'string') {
      const redisNow = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
      if (outcome === 'late') return { outcome, redisNow };
      const [first, second] = rest;
      if (outcome === 'held' && HELD_WHAT.has(first as string) && typeof second === 'string') {
        return { outcome, redisNow, what: first as 'key' | 'record' | 'entity', value: second };
      }
      const records = rest.slice(1);
      if (
        outcome === 'claimed' &&
        (first === 0 || first === 1) &&
        records.every((value) => typeof value === 'string')
      ) {
        return { outcome, redisNow, superseded: first === 1, records: records as string[] };
      }
    }
  }
  throw new StoreUnavailableError('Redis claim failed: unexpected reply from the claim script');
}

/** A value this store wrote (`L:` or `D:`), or a `StoreUnavailableError`: never guess at another's. */
export function checkedValue(value: string): string {
  if (value.startsWith(LEASE) || value.startsWith(DONE)) return value;
  throw new StoreUnavailableError(
    'Redis claim failed: the key holds a value this store did not write',
  );
}

/**
 * The watchdog's notes (src/watchdog/types.ts), kept step by step as memoryStore keeps them
 * (src/stores/memory-watch.ts), in one call. KEYS: four a tenant, `…:watch` (a hash: `s` the last
 * success, `a` the last attempt, `f` failing since), `…:watch-failing` (a hash: the failing
 * deliveries by storage key, `first|seen|last|<JSON of [key, event]>`) and `…:watch-order` (a
 * sorted set: the same storage keys by first attempt) and `…:watch-succeeded` (a sorted set: the
 * storage keys that succeeded, by their latest success; a failure of one at or before it is a late
 * note, ignored for its delivery; a success clears only a delivery last attempted at or before it,
 * and moves the failing time to the last attempt when that came after it). ARGV[1] the oldest
 * first attempt (and success) kept; ARGV[2] the most failing deliveries (and successes) kept a
 * tenant; ARGV[3] keepMs, after which a tenant's failing, order and succeeded keys unwritten
 * expire; ARGV[4] keepSummaryMs, after which its `…:watch` hash unwritten expires (longer than the
 * platform's disable span: its last success must outlive it); ARGV[5] the tenant to read (its
 * number among the KEYS' tenants, 0 for none); ARGV[6] the number of notes, then six values a
 * note: its tenant's number, at, ok (`1`/`0`), whether it has a key (`1`/`0`), the key's storage
 * key, the JSON of `[key, event]` (`''` for a 2xx answer, which needs only the storage key).
 *
 * Replies 0 without a read, or `{ s, a, f, failing… }` (`''` for none), the failing deliveries
 * oldest first attempt first.
 *
 * A note is one or two commands, not a dozen: a tenant's summary is read once a call (with the
 * number of its failing deliveries, counted up as failures come and not down, so a success looks
 * for its key among them only when there may be some), kept in Lua as the notes go, and written
 * once; a success's key is added to `…:watch-succeeded` with `NX`, read back only when it was
 * there already. The script blocks Redis while it runs, and it runs with up to 1 000 notes
 * (src/watchdog/answer-notes.ts): about 3 ms, where a dozen commands a note took 6
 * (bench/watch-writes.ts).
 */
export const WATCH = script(`
local since, maxFailing, keepMs, keepSummaryMs = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local function keysOf(t) return KEYS[t * 4 - 3], KEYS[t * 4 - 2], KEYS[t * 4 - 1], KEYS[t * 4] end
local summaries = {}
local function summaryOf(t)
  local summary = summaries[t]
  if summary then return summary end
  local state, failing = keysOf(t)
  local fields = redis.call('HMGET', state, 's', 'a', 'f')
  summary = { s = fields[1] or nil, a = fields[2] or nil, f = fields[3] or nil,
    failingCount = redis.call('HLEN', failing) }
  summary.hadF = summary.f ~= nil
  summaries[t] = summary
  return summary
end
local function later(summary, field, at, atText)
  local before = summary[field]
  if not before or tonumber(before) < at then summary[field] = atText end
end
local function keep(t, atText, ok, hasKey, id, sent)
  local _, failing, order, succeeded = keysOf(t)
  local summary = summaryOf(t)
  local at = tonumber(atText)
  later(summary, 'a', at, atText)
  if ok == '1' then
    later(summary, 's', at, atText)
    if summary.f and tonumber(summary.f) <= at then
      summary.f = tonumber(summary.a) > at and summary.a or nil
    end
    if hasKey ~= '1' then return end
    if summary.failingCount > 0 then
      local line = redis.call('HGET', failing, id)
      if line and tonumber(string.match(line, '^[^|]*|[^|]*|([^|]*)|')) <= at then
        redis.call('HDEL', failing, id)
        redis.call('ZREM', order, id)
      end
    end
    if redis.call('ZADD', succeeded, 'NX', atText, id) == 0 then
      if tonumber(redis.call('ZSCORE', succeeded, id)) < at then
        redis.call('ZADD', succeeded, atText, id)
      end
    end
    return
  end
  if not summary.s or at > tonumber(summary.s) then
    if not summary.f or at < tonumber(summary.f) then summary.f = atText end
  end
  if hasKey ~= '1' then return end
  local won = redis.call('ZSCORE', succeeded, id)
  if won and tonumber(won) >= at then return end
  local first, seen, last = atText, 1, atText
  local before = redis.call('HGET', failing, id)
  if before then
    local f, n, l, s = string.match(before, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    if tonumber(f) <= at then first = f end
    seen = tonumber(n) + 1
    if tonumber(l) >= at then last = l end
    sent = s
  else
    summary.failingCount = summary.failingCount + 1
  end
  redis.call('HSET', failing, id, first .. '|' .. seen .. '|' .. last .. '|' .. sent)
  redis.call('ZADD', order, first, id)
end
local function writeSummary(t)
  local summary = summaries[t]
  local fields = {}
  for _, field in ipairs({ 's', 'a', 'f' }) do
    if summary[field] then
      fields[#fields + 1] = field
      fields[#fields + 1] = summary[field]
    end
  end
  local state = keysOf(t)
  if #fields > 0 then redis.call('HSET', state, unpack(fields)) end
  if summary.hadF and not summary.f then redis.call('HDEL', state, 'f') end
end
local function forget(failing, ids)
  for _, id in ipairs(ids) do redis.call('HDEL', failing, id) end
end
local function prune(t)
  local _, failing, order, succeeded = keysOf(t)
  redis.call('ZREMRANGEBYSCORE', succeeded, '-inf', '(' .. since)
  local surplus = redis.call('ZCARD', succeeded) - maxFailing
  if surplus > 0 then redis.call('ZREMRANGEBYRANK', succeeded, 0, surplus - 1) end
  forget(failing, redis.call('ZRANGEBYSCORE', order, '-inf', '(' .. since))
  redis.call('ZREMRANGEBYSCORE', order, '-inf', '(' .. since)
  local over = redis.call('ZCARD', order) - maxFailing
  if over > 0 then
    forget(failing, redis.call('ZRANGE', order, 0, over - 1))
    redis.call('ZREMRANGEBYRANK', order, 0, over - 1)
  end
end
local touched, list = {}, {}
for i = 0, tonumber(ARGV[6]) - 1 do
  local b = 7 + i * 6
  local t = tonumber(ARGV[b])
  keep(t, ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5])
  if not touched[t] then touched[t] = true; list[#list + 1] = t end
end
for _, t in ipairs(list) do
  writeSummary(t)
  prune(t)
  local state, failing, order, succeeded = keysOf(t)
  redis.call('PEXPIRE', state, keepSummaryMs)
  for _, key in ipairs({ failing, order, succeeded }) do redis.call('PEXPIRE', key, keepMs) end
end
local read = tonumber(ARGV[5])
if read == 0 then return 0 end
prune(read)
local state, failing, order = keysOf(read)
local fields = redis.call('HMGET', state, 's', 'a', 'f')
local reply = { fields[1] or '', fields[2] or '', fields[3] or '' }
for _, id in ipairs(redis.call('ZRANGE', order, 0, -1)) do
  local line = redis.call('HGET', failing, id)
  if line then reply[#reply + 1] = line end
end
return reply
`);
