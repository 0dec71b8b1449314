/**
 * The jobs of a `bullmqInbox` as BullMQ holds them: listed by state, shown one at a time, and
 * dead letters put back to run again.
 * @module
 */

// Types only: loading BullMQ is the business of schoolhooks/bullmq's entry.
import type { Job, JobType, Queue } from 'bullmq';
import type { BullmqInboxJob } from './bullmq.js';
import type { InboxJob, InboxJobState } from './managed.js';
import type { StoredDelivery } from './types.js';

/** The inbox's BullMQ queue: stored deliveries, completed with the run's outcome. */
export type InboxQueue = Queue<StoredDelivery, string>;
/** One of the inbox's BullMQ jobs. */
export type InboxQueueJob = Job<StoredDelivery, string>;

/** BullMQ's job types behind each state an inbox lists. */
export const JOB_TYPES: Readonly<Record<InboxJobState, JobType[]>> = {
  waiting: ['wait', 'prioritized'],
  delayed: ['delayed'],
  active: ['active'],
  completed: ['completed'],
  failed: ['failed'],
};
export const STATES = Object.keys(JOB_TYPES) as InboxJobState[];

/** How many jobs one Redis call reads when listing. */
const PAGE = 500;

/** Every job of some BullMQ types, oldest first, read a page at a time. */
export async function allJobs(queue: InboxQueue, types: JobType[]): Promise<InboxQueueJob[]> {
  const found: InboxQueueJob[] = [];
  for (let start = 0; ; start += PAGE) {
    const page = await queue.getJobs(types, start, start + PAGE - 1, true);
    // A job removed between the range read and the fetch comes back empty.
    for (const job of page) if (job) found.push(job);
    if (page.length < PAGE) return found;
  }
}

/** A job as {@link BullmqInbox.getJob} shows it, or undefined in a state no inbox lists. */
export async function shown(job: InboxQueueJob): Promise<BullmqInboxJob | undefined> {
  const state = stateOf(await job.getState());
  if (state === undefined) return undefined;
  const view: BullmqInboxJob = listed(job, state);
  if (state === 'completed' && typeof job.returnvalue === 'string') {
    view.outcome = job.returnvalue;
  }
  if (job.finishedOn) view.finishedAt = new Date(job.finishedOn).toISOString();
  return view;
}

/** Move one dead letter back to wait, with all its attempts again; false if it is not one. */
export async function retryOne(job: InboxQueueJob): Promise<boolean> {
  try {
    await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return true;
  } catch {
    // No longer a dead letter (retried meanwhile, or removed): not counted.
    return false;
  }
}

/** A job as {@link InboxJob} lists it, in `state`. */
export function listed(job: InboxQueueJob, state: InboxJobState): InboxJob {
  const data: Partial<StoredDelivery> = job.data ?? {};
  const listing: InboxJob = {
    id: job.id ?? '',
    event: data.event ?? job.name,
    idempotencyKey: data.idempotencyKey ?? '',
    state,
    attemptsMade: job.attemptsMade,
    receivedAt: data.receivedAt ?? new Date(job.timestamp).toISOString(),
  };
  // A completed job keeps the reason of a failed run before it; it no longer explains anything.
  if (state !== 'completed' && job.failedReason) listing.reason = job.failedReason;
  if (typeof data.tenant === 'string') listing.tenant = data.tenant;
  return listing;
}

/** The inbox state of a state BullMQ's getState() names, or undefined for one it lists not. */
function stateOf(state: string): InboxJobState | undefined {
  for (const one of STATES) if ((JOB_TYPES[one] as string[]).includes(state)) return one;
  // `waiting` is how getState() names jobs of the `wait` list.
  return state === 'waiting' || state === 'waiting-children' ? 'waiting' : undefined;
}

/** The jobs in one state, or in every state, each state's oldest first. */
export async function listJobs(queue: InboxQueue, state?: InboxJobState): Promise<InboxJob[]> {
  const list: InboxJob[] = [];
  for (const one of state === undefined ? STATES : [state]) {
    for (const job of await allJobs(queue, JOB_TYPES[one])) list.push(listed(job, one));
  }
  return list;
}

/** Put the dead letters of `event` (or all) back to run again; resolves to how many. */
export async function retryDeadLetters(queue: InboxQueue, event?: string): Promise<number> {
  let count = 0;
  for (const job of await allJobs(queue, ['failed'])) {
    if (event !== undefined && job.data.event !== event) continue;
    if (await retryOne(job)) count++;
  }
  return count;
}
