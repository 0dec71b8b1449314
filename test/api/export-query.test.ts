/**
 * `exportQuery` (docs/api.md#users-groups-and-exports), over real HTTP against
 * createMockSchoolApi: the export started with the platform's names
 * (docs/platform.md#users-groups-and-exports), its result read until it is done, a failed or
 * canceled one a typed error, the wait bounded, the caller's signal obeyed.
 */

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ApiValidationError, ExportError, type SchoolApiOptions } from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { apiFailure, clientOf, CREDENTIALS, sent } from '../helpers/school-api.js';

const MEMBERS = { type: 'GroupMemberFindMany', filter: { groupId: 12 } } as const;

let mock: MockSchoolApi;

beforeEach(async () => {
  mock = await createMockSchoolApi({ ...CREDENTIALS, exportPolls: 3 });
});

afterEach(async () => {
  await mock.close();
});

const api = (options: Partial<SchoolApiOptions> = {}) => clientOf(mock, options);

/** `METHOD path` of each request, the workflow's uuid written as `<uuid>`. */
function calls(): string[] {
  return mock.requests.map(({ method, path }) =>
    `${method} ${path}`.replace(/workflow-execution\/[^/]+\//, 'workflow-execution/<uuid>/'),
  );
}

describe('exportQuery', () => {
  it('starts the export with the platform names, and reads its result until Completed', async () => {
    const file = await api().exportQuery(
      { ...MEMBERS, sort: { createdAt: 'DESC' }, format: 'xlsx' },
      { intervalMs: 20 },
    );

    expect(sent(mock)[0]).toEqual({
      method: 'POST',
      path: '/saas/v2/query-export/generate',
      body: {
        type: 'QUERY_EXPORT_TYPE_GROUP_MEMBER_FIND_MANY',
        variables: { filter: { groupId: 12 }, sort: { createdAt: 'DESC' } },
        format: 'EXPORT_FORMAT_XLSX',
      },
    });
    // Three reads while it runs, then the one that says Completed.
    expect(calls()).toEqual([
      'POST /saas/v2/query-export/generate',
      ...Array(4).fill('GET /saas/v2/workflow-execution/<uuid>/result'),
    ]);
    expect(file).toEqual({
      fileUrl: expect.stringMatching(/^https:\/\/.+\.xlsx$/),
      fileName: expect.stringMatching(/\.xlsx$/),
      fileSize: expect.any(Number),
    });
  });

  it('waits intervalMs between two reads of the result', async () => {
    const started = Date.now();

    await api().exportQuery(MEMBERS, { intervalMs: 100 });

    const reads = mock.requests.slice(1).map(({ receivedAt }) => receivedAt);
    const gaps = reads.slice(1).map((at, index) => at - reads[index]!);
    expect(gaps.every((gap) => gap >= 90)).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(270);
  });

  it('is an ExportError export_failed when the workflow fails', async () => {
    mock.failNextExport();

    const error = await apiFailure(api().exportQuery(MEMBERS, { intervalMs: 10 }));

    expect(error).toBeInstanceOf(ExportError);
    expect(error.code).toBe('export_failed');
    expect((error as ExportError).exportStatus).toBe('Failed');
    expect((error as ExportError).uuid).toMatch(/^[0-9a-f-]{36}$/);
    expect(mock.requests).toHaveLength(5);
  });

  it('is an ExportError export_canceled when the workflow is canceled', async () => {
    mock.failNextExport('Canceled');

    const error = await apiFailure(api().exportQuery(MEMBERS, { intervalMs: 10 }));

    expect(error).toBeInstanceOf(ExportError);
    expect([error.code, (error as ExportError).exportStatus]).toEqual([
      'export_canceled',
      'Canceled',
    ]);
  });

  it('gives up after maxWaitMs with an ExportError export_timeout that names the export', async () => {
    await mock.close();
    mock = await createMockSchoolApi({ ...CREDENTIALS, exportPolls: 1_000 });

    const error = await apiFailure(api().exportQuery(MEMBERS, { intervalMs: 50, maxWaitMs: 200 }));

    expect(error).toBeInstanceOf(ExportError);
    expect(error.code).toBe('export_timeout');
    expect(error.message).toContain((error as ExportError).uuid);
    expect(mock.requests.length).toBeLessThanOrEqual(6);
  });

  it("stops reading at the caller's signal, with its reason", async () => {
    await mock.close();
    mock = await createMockSchoolApi({ ...CREDENTIALS, exportPolls: 1_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 120);

    const outcome = await api()
      .exportQuery(MEMBERS, { intervalMs: 50, signal: controller.signal })
      .catch((error: unknown) => error);
    // A read in flight when the signal fired may reach the mock a moment later.
    await new Promise((resolve) => setTimeout(resolve, 30));
    const reads = mock.requests.length;
    await new Promise((resolve) => setTimeout(resolve, 150));

    expect((outcome as DOMException).name).toBe('AbortError');
    expect(mock.requests).toHaveLength(reads);
  });

  it('waits out a 429 Rate, and starts the export once', async () => {
    mock.rateLimitNext(1, 200);
    const started = Date.now();

    const file = await api().exportQuery(MEMBERS, { intervalMs: 10 });

    expect(file.fileUrl).toMatch(/^https:/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(150);
    expect(calls()).toEqual([
      ...Array(2).fill('POST /saas/v2/query-export/generate'),
      ...Array(4).fill('GET /saas/v2/workflow-execution/<uuid>/result'),
    ]);
  });

  it('is the platform 400 validation for a filter that is not an object (sent past the types)', async () => {
    const error = await apiFailure(
      api().exportQuery({ type: 'GroupMemberFindMany', filter: [] as never }),
    );

    expect(error).toBeInstanceOf(ApiValidationError);
    expect(error.messages).toEqual(['variables.filter must be an object']);
  });

  it('refuses a type or format it does not know before anything is sent', async () => {
    await expect(api().exportQuery({ type: 'Invoices' as never, filter: {} })).rejects.toThrow(
      TypeError,
    );
    await expect(api().exportQuery({ ...MEMBERS, format: 'pdf' as never })).rejects.toThrow(
      TypeError,
    );
    expect(mock.requests).toHaveLength(0);
  });
});
