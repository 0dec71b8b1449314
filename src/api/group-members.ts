/**
 * A group's members (docs/platform.md#users-groups-and-exports): any number of users added to or
 * removed from a group, sent in calls of at most {@link MAX_IDS_PER_CALL} ids and their answers
 * merged. Both operations are retried as `RETRY_ON.repeatable` says.
 * @module
 */

import { z } from 'zod';
import type { KnownOutput } from '../platform/events/known-output.js';
import { isPositiveInteger } from './list-query.js';
import { RETRY_ON } from './retry-delay.js';
import { sendWithRetries } from './send-with-retries.js';
import { answerSchema, type Client } from './transport.js';
import type { ApiCallOptions } from './user-operations.js';

/** The most user ids the platform takes in one call of a group's members. */
export const MAX_IDS_PER_CALL = 100;

const maybeId = z.int().nullish();

/**
 * A member of a group, as `addGroupMembers` answers it. The reference does not describe it:
 * every field may be absent or null, and fields added later pass through.
 *
 * @example
 * ```ts
 * const { created } = await api.addGroupMembers(groupId, [userId]);
 * console.log(created.map((member: GroupMember) => member.userId));
 * ```
 */
export const groupMemberSchema = z.looseObject({
  id: maybeId,
  groupId: maybeId,
  userId: maybeId,
  createdAt: z.string().nullish(),
});
/** A member of a group, as `addGroupMembers` answers it. */
export type GroupMember = KnownOutput<typeof groupMemberSchema>;

/** What `addGroupMembers` resolves to: the answers of its calls, merged. */
export interface AddGroupMembersResult {
  /** The users made members now. */
  created: GroupMember[];
  /** The users who were members already. */
  exist: GroupMember[];
}

/** What `removeGroupMembers` resolves to. */
export interface RemoveGroupMembersResult {
  /** How many memberships were removed, summed over the calls. */
  affected: number;
}

const members = z
  .array(groupMemberSchema)
  .nullish()
  .transform((list) => (list ?? []) as GroupMember[]);
const addAnswer = answerSchema({ created: members, exist: members });
const removeAnswer = answerSchema({ affected: z.number() });

/**
 * `POST /saas/v2/group/<groupId>/member/create-many`, once per {@link MAX_IDS_PER_CALL} ids, one
 * call after the other; `created` and `exist` concatenated in the order of the ids.
 */
export async function addGroupMembers(
  client: Client,
  groupId: number,
  userIds: readonly number[],
  { signal }: ApiCallOptions = {},
): Promise<AddGroupMembersResult> {
  const answers = await sendAll(client, 'POST', groupId, userIds, addAnswer, signal);
  return {
    created: answers.flatMap((answer) => answer.created),
    exist: answers.flatMap((answer) => answer.exist),
  };
}

/**
 * `DELETE /saas/v2/group/<groupId>/member/delete-many`, once per {@link MAX_IDS_PER_CALL} ids, one
 * call after the other; `affected` summed.
 */
export async function removeGroupMembers(
  client: Client,
  groupId: number,
  userIds: readonly number[],
  { signal }: ApiCallOptions = {},
): Promise<RemoveGroupMembersResult> {
  const answers = await sendAll(client, 'DELETE', groupId, userIds, removeAnswer, signal);
  return { affected: answers.reduce((sum, answer) => sum + answer.affected, 0) };
}

/**
 * The answers of the calls `userIds` take, each `{ userIds }` of at most {@link MAX_IDS_PER_CALL},
 * sent one after the other (a failure ends them: the calls before it stay applied).
 */
async function sendAll<S extends z.ZodType>(
  client: Client,
  method: 'POST' | 'DELETE',
  groupId: number,
  userIds: readonly number[],
  schema: S,
  signal: AbortSignal | undefined,
): Promise<z.output<S>[]> {
  const calls = chunks(groupId, userIds);
  const verb = method === 'POST' ? 'create-many' : 'delete-many';
  const path = `/saas/v2/group/${groupId}/member/${verb}`;
  const { sellerId, schoolId } = client.view;
  const answers: z.output<S>[] = [];
  for (const ids of calls) {
    const call = { method, path, body: JSON.stringify({ userIds: ids }) };
    const context = { sellerId, schoolId };
    answers.push(
      await sendWithRetries(client, call, {
        schema,
        retryOn: RETRY_ON.repeatable,
        context,
        signal,
      }),
    );
  }
  return answers;
}

/**
 * The ids, checked with the group's (a TypeError before anything is sent) and each kept once, in
 * calls of at most {@link MAX_IDS_PER_CALL}. No ids: no call.
 */
function chunks(groupId: number, userIds: readonly number[]): number[][] {
  if (!isPositiveInteger(groupId)) throw new TypeError('groupId must be a positive integer');
  if (!Array.isArray(userIds)) throw new TypeError('userIds must be an array of user ids');
  if (!userIds.every(isPositiveInteger)) {
    throw new TypeError('each of userIds must be a positive integer');
  }
  const ids = [...new Set(userIds)];
  const calls: number[][] = [];
  for (let start = 0; start < ids.length; start += MAX_IDS_PER_CALL) {
    calls.push(ids.slice(start, start + MAX_IDS_PER_CALL));
  }
  return calls;
}
