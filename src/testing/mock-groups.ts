/**
 * The groups of the mock platform API and their members (docs/platform.md#users-groups-and-exports):
 * members added and removed at most {@link MAX_IDS_PER_CALL} a call, as the platform takes them.
 * @module
 */

import { MAX_IDS_PER_CALL } from '../api/group-members.js';
import {
  errorAnswer,
  isRecord,
  okAnswer,
  validation,
  type MockAnswer,
  type MockCall,
  type MockRoute,
} from './mock-answers.js';
import type { MockUsers } from './mock-users.js';

/** A member of a group, as the platform answers one. */
interface Member {
  readonly id: number;
  readonly groupId: number;
  readonly userId: number;
  readonly createdAt: string;
}

/** The permissions the mock asks of the group calls: the reference names none, so any of these. */
const PERMISSIONS = ['SchoolManageUsers', 'CourseStudentManage'];

/** The school's groups and their members. */
export class MockGroups {
  readonly #users: MockUsers;
  /** Undefined: every positive id is a group of the school. */
  readonly #groups: ReadonlySet<number> | undefined;
  readonly #members = new Map<number, Map<number, Member>>();
  #lastId = 0;

  constructor(users: MockUsers, groups: readonly number[] | undefined) {
    this.#users = users;
    this.#groups = groups === undefined ? undefined : new Set(groups);
  }

  /** The user ids of the group's members, in the order they joined. */
  memberIds(groupId: number): number[] {
    return [...(this.#members.get(groupId)?.keys() ?? [])];
  }

  /** The routes of the group calls. */
  routes(): MockRoute[] {
    const path = (verb: string): RegExp => new RegExp(`^/saas/v2/group/(\\d+)/member/${verb}$`);
    return [
      {
        method: 'POST',
        pattern: path('create-many'),
        permissions: PERMISSIONS,
        serve: (call) => this.#add(call),
      },
      {
        method: 'DELETE',
        pattern: path('delete-many'),
        permissions: PERMISSIONS,
        serve: (call) => this.#remove(call),
      },
    ];
  }

  #add(call: MockCall): MockAnswer {
    const read = this.#read(call);
    if ('status' in read) return read;
    const { groupId, userIds, members } = read;
    const created: Member[] = [];
    const exist: Member[] = [];
    for (const userId of userIds) {
      const member = members.get(userId);
      if (member !== undefined) {
        exist.push(member);
        continue;
      }
      this.#lastId += 1;
      const joined = { id: this.#lastId, groupId, userId, createdAt: new Date().toISOString() };
      members.set(userId, joined);
      created.push(joined);
    }
    return okAnswer({ exist, created }, 201);
  }

  #remove(call: MockCall): MockAnswer {
    const read = this.#read(call);
    if ('status' in read) return read;
    const affected = read.userIds.filter((userId) => read.members.delete(userId)).length;
    return okAnswer({ affected });
  }

  /** The group, its members and the body's `userIds`, or the platform's refusal. */
  #read({
    params,
    body,
  }: MockCall): MockAnswer | { groupId: number; userIds: number[]; members: Map<number, Member> } {
    const groupId = Number(params[0]);
    const userIds: unknown = isRecord(body) ? body['userIds'] : undefined;
    if (!Array.isArray(userIds)) return validation(['userIds must be an array']);
    if (userIds.length === 0) return validation(['userIds must contain at least 1 elements']);
    if (userIds.length > MAX_IDS_PER_CALL) {
      return validation([`userIds must contain no more than ${MAX_IDS_PER_CALL} elements`]);
    }
    if (!userIds.every((id) => Number.isSafeInteger(id) && id > 0)) {
      return validation(['each value in userIds must be an integer number']);
    }
    if (this.#groups !== undefined && !this.#groups.has(groupId)) {
      return errorAnswer(404, 'GroupNotFound', `Group ${groupId} not found`);
    }
    for (const userId of userIds as number[]) {
      const user = this.#users.lookup(userId);
      if ('status' in user) return user;
    }
    const members = this.#members.get(groupId) ?? new Map<number, Member>();
    this.#members.set(groupId, members);
    return { groupId, userIds: userIds as number[], members };
  }
}
