/**
 * An export of the platform (docs/platform.md#users-groups-and-exports): started, then its
 * workflow's result read every `intervalMs` until it is done, for at most `maxWaitMs`.
 * @module
 */

import { z } from 'zod';
import { API_CLIENT_DEFAULTS } from '../defaults.js';
import { openUnion, type OpenUnion } from '../platform/events/entities.js';
import { ExportError, InvalidResponseError, type ExportErrorCode } from './errors.js';
import { RETRY_ON, sleep } from './retry-delay.js';
import { sendWithRetries } from './send-with-retries.js';
import { answerSchema, type ApiRequest, type Client } from './transport.js';
import type { ApiCallOptions } from './user-operations.js';

/** What the platform exports: a group's members, or the attempts of a lesson's practice. */
export type ExportType = 'GroupMemberFindMany' | 'CourseLessonPracticeAttemptFindMany';
/** The file an export writes. */
export type ExportFormat = 'csv' | 'xlsx' | 'json';
/** A workflow's status, as the platform names them today (an open union). */
export type ExportStatus = OpenUnion<
  'Waiting' | 'Processing' | 'Failed' | 'Canceled' | 'Completed'
>;

/** The query `exportQuery` exports. */
export interface ExportQuery {
  type: ExportType;
  /** The query's filter, as the platform's query of that type takes it (e.g. `{ groupId }`). */
  filter: Readonly<Record<string, unknown>>;
  /** Fields to sort by, each `ASC` or `DESC`. */
  sort?: Readonly<Record<string, 'ASC' | 'DESC'>>;
  /** Default: the platform's. */
  format?: ExportFormat;
}

/** Options of `exportQuery`. */
export interface ExportQueryOptions extends ApiCallOptions {
  /** How long to wait between two reads of the export's result. Default 1 000 ms. */
  intervalMs?: number;
  /**
   * How long, from the start, to wait for the export to finish; past it the call rejects with an
   * {@link ExportError} `export_timeout` (the export may still finish). Default 10 minutes.
   */
  maxWaitMs?: number;
}

/** The file of a finished export. */
export interface ExportFile {
  /** Where to download it. */
  fileUrl: string;
  fileName: string | null;
  /** In bytes. */
  fileSize: number | null;
}

/** The platform's names of the export types. */
const EXPORT_TYPES = {
  GroupMemberFindMany: 'QUERY_EXPORT_TYPE_GROUP_MEMBER_FIND_MANY',
  CourseLessonPracticeAttemptFindMany: 'QUERY_EXPORT_TYPE_COURSE_LESSON_PRACTICE_ATTEMPT_FIND_MANY',
} as const satisfies Record<ExportType, string>;

/** The platform's names of the formats. */
const EXPORT_FORMATS = {
  csv: 'EXPORT_FORMAT_CSV',
  xlsx: 'EXPORT_FORMAT_XLSX',
  json: 'EXPORT_FORMAT_JSON',
} as const satisfies Record<ExportFormat, string>;

/** The statuses that end an export without a file, and the code of the error each one is. */
const UNFINISHED: Readonly<Record<string, ExportErrorCode>> = {
  Failed: 'export_failed',
  Canceled: 'export_canceled',
};

const maybeText = z.string().nullish();
/** The workflow execution `generate` answers: only its `uuid` is needed to read its result. */
const startedAnswer = answerSchema({ uuid: z.string().min(1) });
const resultAnswer = answerSchema({
  status: openUnion<ExportStatus>(),
  result: z
    .looseObject({ fileUrl: maybeText, fileName: maybeText, fileSize: z.number().nullish() })
    .nullish(),
});

/**
 * `POST /saas/v2/query-export/generate`, then `GET /saas/v2/workflow-execution/<uuid>/result`
 * until the status is `Completed` (its file), `Failed` or `Canceled` (an {@link ExportError}), or
 * `maxWaitMs` has passed (an {@link ExportError} `export_timeout`).
 */
export async function exportQuery(
  client: Client,
  query: ExportQuery,
  { signal, intervalMs, maxWaitMs }: ExportQueryOptions = {},
): Promise<ExportFile> {
  const interval = milliseconds(intervalMs, 'intervalMs', API_CLIENT_DEFAULTS.exportIntervalMs);
  const wait = milliseconds(maxWaitMs, 'maxWaitMs', API_CLIENT_DEFAULTS.exportMaxWaitMs);
  const body = JSON.stringify(exportBody(query));
  const deadline = Date.now() + wait;
  const started = await send(
    client,
    { method: 'POST', path: GENERATE_PATH, body },
    startedAnswer,
    signal,
  );
  const path = `/saas/v2/workflow-execution/${encodeURIComponent(started.uuid)}/result`;
  for (;;) {
    const { status, result } = await send(client, { method: 'GET', path }, resultAnswer, signal);
    if (status === 'Completed') return fileOf(result);
    const code = UNFINISHED[status];
    if (code !== undefined || Date.now() + interval > deadline) {
      throw exportError(code ?? 'export_timeout', started.uuid, status, wait);
    }
    await sleep(interval, signal);
  }
}

const GENERATE_PATH = '/saas/v2/query-export/generate';

/** The body of `generate`; a TypeError for a type, filter, sort or format it cannot hold. */
function exportBody({ type, filter, sort, format }: ExportQuery): Record<string, unknown> {
  if (!Object.hasOwn(EXPORT_TYPES, type)) {
    throw new TypeError(`type must be one of ${Object.keys(EXPORT_TYPES).join(', ')}`);
  }
  if (typeof filter !== 'object' || filter === null)
    throw new TypeError('filter must be an object');
  if (sort !== undefined && (typeof sort !== 'object' || sort === null)) {
    throw new TypeError('sort must be an object such as { createdAt: "DESC" }');
  }
  if (format !== undefined && !Object.hasOwn(EXPORT_FORMATS, format)) {
    throw new TypeError(`format must be one of ${Object.keys(EXPORT_FORMATS).join(', ')}`);
  }
  return {
    type: EXPORT_TYPES[type],
    variables: sort === undefined ? { filter } : { filter, sort },
    ...(format === undefined ? {} : { format: EXPORT_FORMATS[format] }),
  };
}

function send<S extends z.ZodType>(
  client: Client,
  call: ApiRequest,
  schema: S,
  signal: AbortSignal | undefined,
): Promise<z.output<S>> {
  const { sellerId, schoolId } = client.view;
  const context = { sellerId, schoolId };
  return sendWithRetries(client, call, { schema, retryOn: RETRY_ON.repeatable, context, signal });
}

/** The file of a completed export; one without its `fileUrl` is of no use to the caller. */
function fileOf(result: z.output<typeof resultAnswer>['result']): ExportFile {
  if (typeof result?.fileUrl !== 'string' || result.fileUrl === '') {
    throw new InvalidResponseError('the platform answered a completed export without its fileUrl', {
      status: 200,
      code: 'invalid_response',
      messages: ['result.fileUrl: missing'],
    });
  }
  return {
    fileUrl: result.fileUrl,
    fileName: result.fileName ?? null,
    fileSize: result.fileSize ?? null,
  };
}

function exportError(
  code: ExportErrorCode,
  uuid: string,
  status: string,
  waitMs: number,
): ExportError {
  const said =
    code === 'export_timeout'
      ? `did not finish within ${waitMs} ms (its status: ${status}); it may still finish`
      : `ended ${status}`;
  return new ExportError(`the export ${uuid} ${said}`, {
    status: 200,
    code,
    uuid,
    exportStatus: status,
  });
}

function milliseconds(value: number | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !(value >= 0) || !Number.isFinite(value)) {
    throw new TypeError(`${name} must be a non-negative number of milliseconds`);
  }
  return value;
}
