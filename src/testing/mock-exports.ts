/**
 * The exports of the mock platform API (docs/platform.md#users-groups-and-exports): started by
 * `generate`, `Waiting` then `Processing` while their result is read, then done after a set
 * number of reads: `Completed` with a file, or `Failed` or `Canceled` when a test asked for it.
 * @module
 */

import { randomUUID } from 'node:crypto';
import {
  errorAnswer,
  isRecord,
  okAnswer,
  validation,
  type MockAnswer,
  type MockCall,
  type MockRoute,
} from './mock-answers.js';

/** How an export of the mock ends. */
export type MockExportEnd = 'Completed' | 'Failed' | 'Canceled';

/** One export the mock runs. */
interface Run {
  readonly id: number;
  readonly uuid: string;
  readonly format: string;
  readonly createdAt: string;
  readonly end: MockExportEnd;
  reads: number;
}

/** The export types and formats of the reference. */
const TYPES = [
  'QUERY_EXPORT_TYPE_GROUP_MEMBER_FIND_MANY',
  'QUERY_EXPORT_TYPE_COURSE_LESSON_PRACTICE_ATTEMPT_FIND_MANY',
];
const FORMATS = ['EXPORT_FORMAT_CSV', 'EXPORT_FORMAT_XLSX', 'EXPORT_FORMAT_JSON'];
/** The permissions the mock asks of the exports: the reference names none, so any of these. */
const PERMISSIONS = ['SchoolManageUsers', 'CourseStudentManage'];
/** The rows an export of the mock holds, for its `total` and `completed`. */
const ROWS = 100;

/** The exports started, and how the next ones end. */
export class MockExports {
  /** How many reads of its result an export answers before the one that says it is done. */
  readonly #reads: number;
  readonly #runs = new Map<string, Run>();
  readonly #ends: MockExportEnd[] = [];

  constructor(reads: number) {
    this.#reads = reads;
  }

  /** The next export started ends so instead of `Completed`. */
  endNext(end: MockExportEnd): void {
    this.#ends.push(end);
  }

  /** The routes of the export calls. */
  routes(): MockRoute[] {
    return [
      {
        method: 'POST',
        pattern: /^\/saas\/v2\/query-export\/generate$/,
        permissions: PERMISSIONS,
        serve: ({ body }) => this.#generate(body),
      },
      {
        method: 'GET',
        pattern: /^\/saas\/v2\/workflow-execution\/([^/]+)\/result$/,
        permissions: PERMISSIONS,
        serve: (call) => this.#result(call),
      },
    ];
  }

  #generate(body: unknown): MockAnswer {
    if (!isRecord(body)) return validation(['body must be an object']);
    const { type, variables, format = 'EXPORT_FORMAT_CSV' } = body;
    const problems = [
      ...(TYPES.includes(type as string)
        ? []
        : [`type must be one of the following values: ${TYPES.join(', ')}`]),
      ...(isRecord(variables) && isRecord(variables['filter'])
        ? []
        : ['variables.filter must be an object']),
      ...(FORMATS.includes(format as string)
        ? []
        : [`format must be one of the following values: ${FORMATS.join(', ')}`]),
    ];
    if (problems.length > 0) return validation(problems);
    const run: Run = {
      id: this.#runs.size + 1,
      uuid: randomUUID(),
      format: String(format),
      createdAt: new Date().toISOString(),
      end: this.#ends.shift() ?? 'Completed',
      reads: 0,
    };
    this.#runs.set(run.uuid, run);
    const { id, uuid, createdAt } = run;
    return okAnswer({ id, uuid, status: 'Waiting', isCompleted: false, createdAt }, 201);
  }

  #result({ params }: MockCall): MockAnswer {
    const run = this.#runs.get(decodeURIComponent(params[0] ?? ''));
    if (run === undefined)
      return errorAnswer(404, 'WorkflowExecutionNotFound', 'Workflow execution not found');
    run.reads += 1;
    if (run.reads <= this.#reads) {
      const status = run.reads === 1 ? 'Waiting' : 'Processing';
      const completed = Math.floor((ROWS * (run.reads - 1)) / this.#reads);
      return okAnswer({ total: ROWS, completed, status, result: null });
    }
    const done = run.end === 'Completed';
    return okAnswer({
      total: ROWS,
      completed: done ? ROWS : 0,
      status: run.end,
      result: done ? fileOf(run) : null,
    });
  }
}

/** The file of a completed export. */
function fileOf({ uuid, format }: Run): Record<string, unknown> {
  const extension = format.replace('EXPORT_FORMAT_', '').toLowerCase();
  const fileName = `export-${uuid}.${extension}`;
  return { fileUrl: `https://files.example.com/exports/${fileName}`, fileName, fileSize: 2_048 };
}
