/**
 * The inbox: its contract, and the in-process implementation (`bullmqInbox` lives in
 * `schoolhooks/bullmq` and `pgBossInbox` in `schoolhooks/postgres`, so the core never loads
 * BullMQ nor pg-boss).
 * @module
 */

export { memoryInbox } from './memory.js';
export type { MemoryInbox, MemoryInboxOptions } from './memory.js';
export type {
  InboxAdmin,
  InboxJob,
  InboxJobAdmin,
  InboxJobLookup,
  InboxJobState,
  InboxWorker,
  InboxWorkers,
  InboxWorkOptions,
  ManagedInbox,
} from './managed.js';
export type { InboxReconcileOptions, ScheduledReconciler } from './reconcile-schedule.js';
export type { InboxWatchOptions, WatchedWatchdog } from './watch-schedule.js';
export type { Inbox, StoredDelivery, StoredRunOptions, StoredRunResult } from './types.js';
