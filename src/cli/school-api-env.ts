/**
 * The school's API client of a CLI command (`reconcile`, `health`): its root from `--api-url` (or
 * `$SCHOOL_API_URL`), its credentials from the environment only (SCHOOL_API_KEY, SCHOOL_SELLER_ID,
 * SCHOOL_ID), never from an argument; the key is never part of a message.
 * @module
 */

import { createSchoolApi } from '../api/create-school-api.js';
import { ConfigError } from '../errors.js';
import { isHttpUrl } from '../testing/endpoint-config.js';
import { UsageError, type CliIo } from './command.js';

/** The API client a command reads the platform's lists with. */
export type CliSchoolApi = ReturnType<typeof createSchoolApi>;

/**
 * The API client of `apiUrl` (else `$SCHOOL_API_URL`) and the environment's credentials; a
 * {@link UsageError} when one is missing or wrong.
 *
 * @example
 * ```ts
 * const api = schoolApiOf(values['api-url'], io.env);
 * ```
 */
export function schoolApiOf(apiUrl: string | undefined, env: CliIo['env']): CliSchoolApi {
  const url = apiUrl ?? nonEmpty(env['SCHOOL_API_URL']);
  if (url === undefined) {
    throw new UsageError('--api-url is required (or the SCHOOL_API_URL variable)');
  }
  const source = apiUrl === undefined ? '$SCHOOL_API_URL' : '--api-url';
  if (!isHttpUrl(url)) throw new UsageError(`${source} must be an http:// or https:// URL`);
  const apiKey = nonEmpty(env['SCHOOL_API_KEY']);
  if (apiKey === undefined) {
    throw new UsageError(
      'the SCHOOL_API_KEY variable is required: the API key (never an argument)',
    );
  }
  const sellerId = positiveInteger(env['SCHOOL_SELLER_ID'], 'SCHOOL_SELLER_ID');
  const schoolId = positiveInteger(env['SCHOOL_ID'], 'SCHOOL_ID');
  try {
    return createSchoolApi({ baseUrl: url, apiKey, sellerId, schoolId });
  } catch (error) {
    // Its messages name the option (baseUrl, apiKey), never the key's value.
    if (error instanceof ConfigError) throw new UsageError(`the API's options: ${error.message}`);
    throw error;
  }
}

/**
 * The API client when `apiUrl` or `$SCHOOL_API_URL` names one (as {@link schoolApiOf}), else
 * undefined: for a command that reads the lists only when asked to.
 *
 * @example
 * ```ts
 * const api = optionalSchoolApiOf(values['api-url'], io.env); // undefined without a URL
 * ```
 */
export function optionalSchoolApiOf(
  apiUrl: string | undefined,
  env: CliIo['env'],
): CliSchoolApi | undefined {
  if (apiUrl === undefined && nonEmpty(env['SCHOOL_API_URL']) === undefined) return undefined;
  return schoolApiOf(apiUrl, env);
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === '' ? undefined : value;
}

function positiveInteger(value: string | undefined, name: string): number {
  const number = /^\d+$/.test(value?.trim() ?? '') ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(number) || number < 1) {
    throw new UsageError(
      value === undefined || value.trim() === ''
        ? `the ${name} variable is required`
        : `the ${name} variable must be a positive integer`,
    );
  }
  return number;
}
