/**
 * redisStore's `watch`: the watchdog's notes (src/watchdog/types.ts) as the arguments of the
 * {@link WATCH} script, and its reply as a tenant's state.
 *
 * A tenant's notes are four keys under one hash tag, `watch:` and the tenant (its `storageKey`,
 * with `%`, `{` and `}` escaped as the store escapes every key): `${prefix}{watch:<tenant>}:watch`,
 * `…:watch-failing`, `…:watch-order` and `…:watch-succeeded` (the keys that succeeded lately, so a
 * late note of an earlier failure does not count them failing again). No other key of the store ends that way, and two tenants
 * are two tags whatever their code units. The summary (`…:watch`: last success, last attempt,
 * failing time) expires keepSummaryMs after its tenant's last write, longer than the platform's
 * disable span (src/platform/platform-contract.ts), so an endpoint that hears nothing for days still knows
 * when it is disabled; the failing deliveries (`…:watch-failing`, `…:watch-order`) and the
 * successes (`…:watch-succeeded`) keepMs after.
 * @module
 */

import { StoreUnavailableError } from '../errors.js';
import type { AnswerNote, FailingDelivery, WatchBatch, WatchState } from '../watchdog/types.js';
import { storageKey } from './storage-key.js';

/** One script call of a `watch`: its keys and arguments, and whether it reads a tenant. */
export interface WatchCallArgs {
  readonly keys: readonly string[];
  readonly args: readonly (string | number)[];
  readonly reads: boolean;
}

/**
 * The script calls of `batch`: one for all of it, or on a Cluster (where a script touches one
 * hash slot only) one a tenant. `hashTag` gives the store's `{…}` of a text.
 */
export function watchCalls(
  { notes, keepMs, keepSummaryMs, maxFailing, now, read }: WatchBatch,
  keyPrefix: string,
  hashTag: (text: string) => string,
  cluster: boolean,
): WatchCallArgs[] {
  const byTenant = new Map<string, AnswerNote[]>();
  for (const note of notes) {
    const same = byTenant.get(note.scope);
    if (same === undefined) byTenant.set(note.scope, [note]);
    else same.push(note);
  }
  if (read !== undefined && !byTenant.has(read)) byTenant.set(read, []);
  const groups = cluster ? [...byTenant].map((entry) => [entry]) : [[...byTenant]];
  const head = [String(now - keepMs), maxFailing, Math.ceil(keepMs), Math.ceil(keepSummaryMs)];
  return groups.map((tenants) => {
    const keys: string[] = [];
    const noteArgs: (string | number)[] = [];
    let readAt = 0;
    tenants.forEach(([tenant, tenantNotes], index) => {
      const base = keyPrefix + hashTag(`watch:${tenant}`);
      keys.push(
        `${base}:watch`,
        `${base}:watch-failing`,
        `${base}:watch-order`,
        `${base}:watch-succeeded`,
      );
      if (tenant === read) readAt = index + 1;
      for (const note of tenantNotes) noteArgs.push(index + 1, ...noteValues(note));
    });
    return {
      keys,
      args: [...head, readAt, noteArgs.length / 6, ...noteArgs],
      reads: readAt !== 0,
    };
  });
}

/** A note's five values after its tenant's number, as {@link WATCH} reads them. */
function noteValues({ at, ok, key, event }: AnswerNote): (string | number)[] {
  const hasKey = key !== undefined;
  // JSON writes a lone surrogate as a \u escape, and U+0000 too: every key comes back as it was.
  const sent = hasKey && !ok ? JSON.stringify([key, event ?? '']) : '';
  return [String(at), ok ? '1' : '0', hasKey ? '1' : '0', hasKey ? storageKey(key) : '', sent];
}

const FAILING = /^([^|]*)\|([^|]*)\|([^|]*)\|(.*)$/s;

/** The {@link WATCH} script's reply to a read, or a `StoreUnavailableError` for one it never gives. */
export function parseWatchReply(reply: unknown): WatchState {
  if (Array.isArray(reply) && reply.every((value) => typeof value === 'string')) {
    const [s, a, f, ...lines] = reply as string[];
    const failing: FailingDelivery[] = [];
    for (const line of lines) {
      const match = FAILING.exec(line);
      const sent = match === null ? undefined : parsed(match[4]!);
      if (!Array.isArray(sent) || typeof sent[0] !== 'string' || typeof sent[1] !== 'string') {
        throw unexpected();
      }
      failing.push({
        key: sent[0],
        event: sent[1],
        firstAttemptAt: Number(match![1]),
        attemptsSeen: Number(match![2]),
        lastAttemptAt: Number(match![3]),
      });
    }
    return { lastSuccessAt: time(s), lastAttemptAt: time(a), failingSince: time(f), failing };
  }
  throw unexpected();
}

function parsed(json: string): unknown {
  try {
    return JSON.parse(json);
  } catch {
    return undefined;
  }
}

function time(text: string | undefined): number | undefined {
  return text === undefined || text === '' ? undefined : Number(text);
}

function unexpected(): StoreUnavailableError {
  return new StoreUnavailableError('Redis watch failed: unexpected reply from the watch script');
}
