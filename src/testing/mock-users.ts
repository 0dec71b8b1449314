/**
 * The users of the mock platform API (docs/platform.md#users-groups-and-exports): each of a
 * school, created (a second create with the same logins makes a second user, as the platform's
 * does), updated, upserted by their logins, found, with their states; and who may have a session.
 * Its reading of the platform's fields is its own, apart from the client's, so a test of one
 * checks the other.
 * @module
 */

import { randomUUID } from 'node:crypto';
import type { ApiUser } from '../api/api-user-schema.js';
import type { UserInput } from '../api/user-operations.js';
import {
  errorAnswer,
  isRecord,
  okAnswer,
  validation,
  type MockAnswer,
  type MockCall,
  type MockRoute,
} from './mock-answers.js';

/** A user of the mock platform: its id, its school, and any of the fields the API writes. */
export interface MockSchoolApiUser extends UserInput {
  id: number;
  /** The user's school. Default: the seller's school; any other makes the user foreign. */
  schoolId?: number;
}

/** A user the mock holds: the platform's user object, and the mock's own bookkeeping. */
interface Held {
  readonly schoolId: number;
  readonly user: Record<string, unknown> & { id: number };
  readonly states: Map<string, unknown>;
}

/** What the mock checks of one field of a body: a test of its value, and what the platform says. */
interface FieldRule {
  readonly valid: (value: unknown) => boolean;
  readonly says: string;
  /** The fields of an object value. */
  readonly fields?: Readonly<Record<string, FieldRule>>;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
const text: FieldRule = { valid: (value) => typeof value === 'string', says: 'must be a string' };
const email: FieldRule = {
  valid: (value) => typeof value === 'string' && EMAIL.test(value),
  says: 'must be an email',
};
const oneOf = (...values: string[]): FieldRule => ({
  valid: (value) => typeof value === 'string' && values.includes(value),
  says: `must be one of the following values: ${values.join(', ')}`,
});
const object = (fields: Record<string, FieldRule>): FieldRule => ({
  valid: isRecord,
  says: 'must be an object',
  fields,
});

/** The body of create, update and upsert (every field may be null). */
const USER_FIELDS: Readonly<Record<string, FieldRule>> = {
  email,
  phone: text,
  tgId: { valid: Number.isSafeInteger, says: 'must be an integer number' },
  extId: text,
  banned: { valid: (value) => typeof value === 'boolean', says: 'must be a boolean value' },
  profile: object({
    firstName: text,
    lastName: text,
    bdate: {
      valid: (value) => typeof value === 'string' && !Number.isNaN(Date.parse(value)),
      says: 'must be a valid ISO 8601 date string',
    },
    sex: oneOf('Ufo', 'Women', 'Men'),
    role: oneOf('Student', 'Tutor', 'Parent'),
    contact: object({ phone: text, email, messengerUrl: text }),
  }),
};
/** The fields a user is matched by (upsert) and found by (find: `login` is an email or a phone). */
const LOGINS = ['email', 'phone', 'tgId', 'extId'] as const;
const STATE_KEY = oneOf('PersonalInfoFilled', 'UtmSignupParams', 'CustomField');
const FOREIGN_USER = 'Forbidden seller resource - seller not entity owner';
const PERMISSIONS = ['SchoolManageUsers'];

/** The school's users, the users of other schools the mock knows, and the admins. */
export class MockUsers {
  readonly #schoolId: number;
  /** Without `users`, every positive id is a user of the school (held once first used). */
  readonly #open: boolean;
  readonly #admins: ReadonlySet<number>;
  readonly #held = new Map<number, Held>();

  constructor(
    schoolId: number,
    users: readonly (number | MockSchoolApiUser)[] | undefined,
    admins: readonly number[],
  ) {
    this.#schoolId = schoolId;
    this.#open = users === undefined;
    this.#admins = new Set(admins);
    for (const given of users ?? []) {
      const {
        id,
        schoolId: school = schoolId,
        ...fields
      } = typeof given === 'number' ? { id: given } : given;
      this.#hold(id, school, fields);
    }
    for (const id of admins) if (!this.#held.has(id)) this.#hold(id, schoolId, {});
  }

  /** The refusal of a session for this user (of another school, unknown, an admin), if any. */
  sessionRefusal(userId: number): MockAnswer | undefined {
    const held = this.#held.get(userId);
    const home = held?.schoolId ?? (this.#open ? this.#schoolId : undefined);
    if (home !== this.#schoolId) return errorAnswer(401, 'Forbidden', FOREIGN_USER);
    if (this.#admins.has(userId))
      return errorAnswer(400, 'Forbidden', 'User is school admin or manager');
    return undefined;
  }

  /**
   * The user of the school with this id, or the platform's refusal: 401 `Forbidden` for a user
   * of another school, 404 `UserNotFound` for an id the mock does not know.
   */
  lookup(userId: number): Held | MockAnswer {
    const held =
      this.#held.get(userId) ?? (this.#open ? this.#hold(userId, this.#schoolId, {}) : undefined);
    if (held === undefined) return errorAnswer(404, 'UserNotFound', `User ${userId} not found`);
    if (held.schoolId !== this.#schoolId) return errorAnswer(401, 'Forbidden', FOREIGN_USER);
    return held;
  }

  /** Copies of the school's users, in the order the mock first held them. */
  copies(): ApiUser[] {
    return [...this.#held.values()]
      .filter((held) => held.schoolId === this.#schoolId)
      .map((held) => structuredClone(held.user) as ApiUser);
  }

  /** The routes of the user operations. */
  routes(): MockRoute[] {
    const route = (
      method: MockRoute['method'],
      pattern: RegExp,
      serve: MockRoute['serve'],
    ): MockRoute => ({
      method,
      pattern,
      permissions: PERMISSIONS,
      serve,
    });
    return [
      route('POST', /^\/saas\/v2\/user\/create$/, ({ body }) => this.#create(body)),
      route('PUT', /^\/saas\/v2\/user\/(\d+)\/update$/, (call) => this.#update(call)),
      route('PUT', /^\/saas\/v2\/user\/upsert$/, ({ body }) => this.#upsert(body)),
      route('GET', /^\/saas\/v2\/user\/find$/, ({ query }) => this.#find(query)),
      route('GET', /^\/saas\/v2\/user\/(\d+)\/state\/get$/, (call) => this.#state(call, false)),
      route('PUT', /^\/saas\/v2\/user\/(\d+)\/state\/set$/, (call) => this.#state(call, true)),
    ];
  }

  #create(body: unknown): MockAnswer {
    const refused = refusalOf(body, USER_FIELDS, '');
    if (refused !== undefined) return refused;
    const held = this.#hold(this.#nextId(), this.#schoolId, body as UserInput);
    return okAnswer({ user: structuredClone(held.user) }, 201);
  }

  #update({ params, body }: MockCall): MockAnswer {
    const refused = refusalOf(body, USER_FIELDS, '');
    if (refused !== undefined) return refused;
    const held = this.lookup(Number(params[0]));
    if ('status' in held) return held;
    write(held.user, body as UserInput);
    return okAnswer({ user: structuredClone(held.user) });
  }

  #upsert(body: unknown): MockAnswer {
    const refused = refusalOf(body, USER_FIELDS, '');
    if (refused !== undefined) return refused;
    const input = body as Record<string, unknown>;
    const logins = LOGINS.filter((login) => input[login] !== undefined && input[login] !== null);
    if (logins.length === 0)
      return validation(['one of email, phone, tgId or extId must be given']);
    const found = this.#school().find((held) =>
      logins.some((login) => held.user[login] === input[login]),
    );
    const held = found ?? this.#hold(this.#nextId(), this.#schoolId, {});
    write(held.user, input as UserInput);
    return okAnswer({ user: structuredClone(held.user), isCreated: found === undefined });
  }

  #find(query: URLSearchParams): MockAnswer {
    const given = ['login', 'tgId', 'extId'].filter((name) => query.has(name));
    const [name] = given;
    if (name === undefined || given.length > 1) {
      return validation(['exactly one of login, tgId and extId must be given']);
    }
    const value = query.get(name) ?? '';
    const matches = (held: Held): boolean =>
      name === 'login'
        ? held.user['email'] === value || held.user['phone'] === value
        : String(held.user[name]) === value;
    const held = this.#school().find(matches);
    return okAnswer({ user: held ? structuredClone(held.user) : null });
  }

  #state({ params, query, body }: MockCall, set: boolean): MockAnswer {
    const key = query.get('key');
    if (!STATE_KEY.valid(key)) return validation([`key ${STATE_KEY.says}`]);
    if (set && !(isRecord(body) && 'value' in body))
      return validation(['value should not be undefined']);
    const held = this.lookup(Number(params[0]));
    if ('status' in held) return held;
    if (!set) return okAnswer({ value: held.states.get(key as string) ?? null });
    held.states.set(key as string, structuredClone((body as { value: unknown }).value));
    return okAnswer({ set: true });
  }

  #school(): Held[] {
    return [...this.#held.values()].filter((held) => held.schoolId === this.#schoolId);
  }

  #hold(id: number, schoolId: number, fields: UserInput): Held {
    const user = newUser(id, schoolId);
    write(user, structuredClone(fields));
    const held: Held = { schoolId, user, states: new Map() };
    this.#held.set(id, held);
    return held;
  }

  #nextId(): number {
    let id = Math.max(10_000, ...this.#held.keys()) + 1;
    while (this.#held.has(id)) id += 1;
    return id;
  }
}

/** The platform's validation answer for a body that breaks `fields`, or undefined. */
function refusalOf(
  body: unknown,
  fields: Readonly<Record<string, FieldRule>>,
  prefix: string,
): MockAnswer | undefined {
  const found = issues(body, fields, prefix);
  return found.length === 0 ? undefined : validation(found);
}

/** What is wrong with `value` against `fields`, in the platform's words: `property x should not exist`, `email must be an email`. */
function issues(
  value: unknown,
  fields: Readonly<Record<string, FieldRule>>,
  prefix: string,
): string[] {
  if (!isRecord(value)) return ['body must be an object'];
  const found: string[] = [];
  for (const [name, given] of Object.entries(value)) {
    const rule = fields[name];
    if (rule === undefined) found.push(`property ${prefix}${name} should not exist`);
    else if (given === null) continue;
    else if (!rule.valid(given)) found.push(`${prefix}${name} ${rule.says}`);
    else if (rule.fields) found.push(...issues(given, rule.fields, `${prefix}${name}.`));
  }
  return found;
}

/** A new user as the platform makes one: every login empty, a student's profile. */
function newUser(id: number, schoolId: number): Held['user'] {
  const now = new Date().toISOString();
  return {
    id,
    uuid: randomUUID(),
    active: true,
    activated: false,
    banned: false,
    domain: null,
    email: null,
    phone: null,
    vkId: null,
    tgId: null,
    extId: null,
    appleId: null,
    language: null,
    timezone: null,
    starsBalance: 0,
    lastOnlineAt: null,
    createdAt: now,
    updatedAt: now,
    profile: {
      id,
      firstName: null,
      lastName: null,
      bdate: null,
      sex: null,
      role: 'Student',
      country: null,
      city: null,
      school: schoolId,
      official: false,
      contact: null,
      createdAt: now,
      updatedAt: now,
    },
  };
}

/** Writes the given fields onto the user: null clears one, a profile is merged field by field. */
function write(user: Held['user'], input: UserInput): void {
  const { profile, banned, ...logins } = input;
  Object.assign(user, logins);
  if (banned !== undefined) user['banned'] = banned ?? false;
  if (isRecord(profile)) Object.assign(user['profile'] as Record<string, unknown>, profile);
  user['updatedAt'] = new Date().toISOString();
}
