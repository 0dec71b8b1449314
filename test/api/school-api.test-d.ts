import { describe, expectTypeOf, it } from 'vitest';
import {
  createSchoolApi,
  type AddGroupMembersResult,
  type ApiUser,
  type ExportFile,
  type GroupMember,
  type RemoveGroupMembersResult,
  type SetUserStateResult,
  type UpsertUserResult,
  type UserResult,
} from '../../src/api/index.js';

const api = createSchoolApi({
  baseUrl: 'https://api.example.com',
  apiKey: 'key',
  sellerId: 1,
  schoolId: 1,
});

describe('the user operations', () => {
  it('type what they resolve to', () => {
    expectTypeOf(api.createUser({ email: 'a@example.com' })).resolves.toEqualTypeOf<UserResult>();
    expectTypeOf(
      api.upsertUser({ email: 'a@example.com' }),
    ).resolves.toEqualTypeOf<UpsertUserResult>();
    expectTypeOf(api.updateUser(1, {})).resolves.toEqualTypeOf<UserResult>();
    expectTypeOf(api.findUser({ login: 'a@example.com' })).resolves.toEqualTypeOf<ApiUser | null>();
    expectTypeOf(
      api.setUserState(1, 'CustomField', 1),
    ).resolves.toEqualTypeOf<SetUserStateResult>();
    expectTypeOf<UserResult['user']['email']>().toEqualTypeOf<string | null | undefined>();
    expectTypeOf<UpsertUserResult['isCreated']>().toEqualTypeOf<boolean>();
  });

  it('refuse a misspelt field of the user, at any depth', () => {
    // @ts-expect-error -- emial is not a field of a user
    void api.createUser({ emial: 'a@example.com' });
    // @ts-expect-error -- firstname is not a field of a profile (firstName is)
    void api.createUser({ profile: { firstname: 'Ada' } });
    // @ts-expect-error -- tgId is a number
    void api.upsertUser({ tgId: '77' });
    // @ts-expect-error -- messenger is not a field of a contact
    void api.updateUser(1, { profile: { contact: { messenger: 'https://t.me/ada' } } });
  });

  it('accept null to clear a field, and values the platform adds later in an open union', () => {
    void api.updateUser(1, { phone: null, profile: { sex: null, role: 'Mentor' } });
  });

  it('refuse a state key the platform does not keep', () => {
    void api.getUserState(1, 'PersonalInfoFilled');
    void api.setUserState(1, 'UtmSignupParams', { utm_source: 'x' });
    // @ts-expect-error -- the keys are PersonalInfoFilled, UtmSignupParams and CustomField
    void api.getUserState(1, 'CustomFields');
    // @ts-expect-error -- a wrong key when writing too
    void api.setUserState(1, 'Mood', 'happy');
  });

  it('find a user by exactly one of login, tgId and extId', () => {
    void api.findUser({ tgId: 77 });
    void api.findUser({ extId: 'crm-1' });
    // @ts-expect-error -- two ways at once
    void api.findUser({ login: 'a@example.com', tgId: 77 });
    // @ts-expect-error -- email is not how findUser looks a user up (login is)
    void api.findUser({ email: 'a@example.com' });
  });
});

describe('groups and exports', () => {
  it('type what they resolve to', () => {
    expectTypeOf(api.addGroupMembers(1, [1, 2])).resolves.toEqualTypeOf<AddGroupMembersResult>();
    expectTypeOf<AddGroupMembersResult['created']>().toEqualTypeOf<GroupMember[]>();
    expectTypeOf(api.removeGroupMembers(1, [1])).resolves.toEqualTypeOf<RemoveGroupMembersResult>();
    expectTypeOf(
      api.exportQuery({ type: 'GroupMemberFindMany', filter: { groupId: 1 } }),
    ).resolves.toEqualTypeOf<ExportFile>();
  });

  it('refuse an export type, format or sort order the platform does not have', () => {
    // @ts-expect-error -- the types are GroupMemberFindMany and CourseLessonPracticeAttemptFindMany
    void api.exportQuery({ type: 'InvoiceFindMany', filter: {} });
    // @ts-expect-error -- the formats are csv, xlsx and json
    void api.exportQuery({ type: 'GroupMemberFindMany', filter: {}, format: 'pdf' });
    // @ts-expect-error -- a sort is ASC or DESC
    void api.exportQuery({ type: 'GroupMemberFindMany', filter: {}, sort: { createdAt: 'down' } });
    // @ts-expect-error -- the ids are numbers
    void api.addGroupMembers(1, ['2']);
  });
});
