/**
 * A client of a mock API for the tests of the API client over real HTTP: the mock's credentials,
 * and what a call rejects with, required to be a `SchoolApiError`.
 * @module
 */

import {
  createSchoolApi,
  isSchoolApiError,
  type SchoolApi,
  type SchoolApiError,
  type SchoolApiOptions,
} from '../../src/api/index.js';
import type { MockSchoolApi } from '../../src/testing/mock-school-api.js';

/** The credentials the tests' mocks are started with. */
export const CREDENTIALS = {
  apiKey: 'sk_live_Q7f3c9a1e5b2d4f608a9c1e3b5d7f9a1c',
  sellerId: 1042,
  schoolId: 877,
};

/** A client of `mock` with {@link CREDENTIALS}, and `options` over them. */
export function clientOf(mock: MockSchoolApi, options: Partial<SchoolApiOptions> = {}): SchoolApi {
  return createSchoolApi({ baseUrl: mock.url, ...CREDENTIALS, ...options });
}

/** The rejection of `promise`, which must be a SchoolApiError. */
export async function apiFailure(promise: Promise<unknown>): Promise<SchoolApiError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  if (!isSchoolApiError(outcome))
    throw new Error(`expected a SchoolApiError, got ${String(outcome)}`);
  return outcome;
}

/** The JSON bodies the mock received, each parsed, with the method and path of its request. */
export function sent(mock: MockSchoolApi): { method: string; path: string; body: unknown }[] {
  return mock.requests.map(({ method, path, body }) => ({
    method,
    path,
    body: body === '' ? undefined : (JSON.parse(body) as unknown),
  }));
}
