/**
 * The query a list sends is the platform's (docs/platform.md#list-operations): the path and the
 * parameter names of the reference's table, arrays as a repeated key, ranges as `name[from]` and
 * `name[to]` ISO dates, paid invoices as `payment[actualStatuses]=Completed`, paging as `take` and
 * `skip`. The expected queries are written out here from the reference, and the table of the page
 * itself is read, so neither comes from the client's own code.
 */

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSchoolApi, type SchoolApi } from '../../src/api/index.js';
import { createMockSchoolApi, type MockSchoolApi } from '../../src/testing/mock-school-api.js';
import { readPage } from '../helpers/markdown.js';

let mock: MockSchoolApi;
let api: SchoolApi;

beforeAll(async () => {
  mock = await createMockSchoolApi({ apiKey: 'k', sellerId: 2, schoolId: 3 });
  api = createSchoolApi({ baseUrl: mock.url, apiKey: 'k', sellerId: 2, schoolId: 3 });
});

afterAll(async () => {
  await mock.close();
});

/** The list's row of the reference's table: its path and its filters' names. */
function referenceRow(list: string): { path: string; filters: string[] } {
  const lines = readPage('docs/platform.md').split('\n');
  const start = lines.indexOf('## List operations');
  expect(start).toBeGreaterThan(-1);
  const row = lines
    .slice(start)
    .find((line) => line.startsWith(`| ${list} `))
    ?.split('|')
    .map((cell) => cell.trim());
  expect(row, `docs/platform.md has a row for ${list}`).toBeDefined();
  const names = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((match) => match[1]!);
  return { path: names(row![2]!)[0]!, filters: names(row![4]!) };
}

/** The path and the query pairs (decoded, sorted) of the one request `run` made. */
async function sent(
  run: () => AsyncIterable<unknown>,
): Promise<{ path: string; query: string[][] }> {
  const before = mock.requests.length;
  for await (const _item of run()) {
    // The mock's lists are empty: nothing to read, only the request matters.
  }
  expect(mock.requests.length - before).toBe(1);
  const url = new URL(mock.requests.at(-1)!.path, mock.url);
  const query = [...url.searchParams].sort(([a = '', x = ''], [b = '', y = '']) =>
    a === b ? x.localeCompare(y) : a.localeCompare(b),
  );
  return { path: url.pathname, query };
}

/** A query parameter's filter name: `createdAtDateRange[from]` belongs to `createdAtDateRange`. */
function filterName(parameter: string): string {
  return parameter.replace(/\[(from|to)\]$/, '');
}

const cases = [
  {
    list: 'invoices',
    run: () =>
      api.invoices({
        take: 50,
        paid: true,
        createdAt: { from: '2026-11-01T00:00:00Z', to: new Date('2026-11-08T00:00:00Z') },
        userIds: [11, 12],
        productIds: [21],
        types: ['Regular'],
        invoiceIds: [31, 32],
      }),
    expected: [
      ['createdAtDateRange[from]', '2026-11-01T00:00:00.000Z'],
      ['createdAtDateRange[to]', '2026-11-08T00:00:00.000Z'],
      ['invoiceIds', '31'],
      ['invoiceIds', '32'],
      ['payment[actualStatuses]', 'Completed'],
      ['productIds', '21'],
      ['skip', '0'],
      ['take', '50'],
      ['types', 'Regular'],
      ['userIds', '11'],
      ['userIds', '12'],
    ],
  },
  {
    list: 'product accesses',
    run: () =>
      api.productAccesses({
        take: 10,
        createdAt: { from: '2026-11-01T00:00:00Z' },
        active: true,
        userIds: [11],
        courseIds: [41],
        accessIds: [51],
      }),
    expected: [
      ['accessIds', '51'],
      ['active', 'true'],
      ['courseIds', '41'],
      ['createdAtDateRange[from]', '2026-11-01T00:00:00.000Z'],
      ['skip', '0'],
      ['take', '10'],
      ['userIds', '11'],
    ],
  },
  {
    list: 'certificates',
    run: () =>
      api.certificates({
        take: 10,
        issuedAt: { from: '2026-11-01T00:00:00Z', to: '2026-11-02T00:00:00Z' },
        courseIds: [41],
        userIds: [11],
        certificateIds: [61],
      }),
    expected: [
      ['certificateIds', '61'],
      ['courseIds', '41'],
      ['issuedAtDateRange[from]', '2026-11-01T00:00:00.000Z'],
      ['issuedAtDateRange[to]', '2026-11-02T00:00:00.000Z'],
      ['skip', '0'],
      ['take', '10'],
      ['userIds', '11'],
    ],
  },
  {
    list: 'users',
    run: () =>
      api.users({
        take: 10,
        createdAt: { to: '2026-11-02T00:00:00Z' },
        userIds: [11],
        statuses: ['Active', 'Banned'],
      }),
    expected: [
      ['createdAtDateRange[to]', '2026-11-02T00:00:00.000Z'],
      ['skip', '0'],
      ['statuses', 'Active'],
      ['statuses', 'Banned'],
      ['take', '10'],
      ['userIds', '11'],
    ],
  },
];

describe('the query of each list, against docs/platform.md#list-operations', () => {
  it.each(cases)(
    '$list: every filter under its reference name',
    async ({ list, run, expected }) => {
      const { path, query } = await sent(run);

      expect(query).toEqual(expected);
      const reference = referenceRow(list);
      expect(path).toBe(reference.path);
      const names = new Set(query.map(([name = '']) => filterName(name)));
      names.delete('take');
      names.delete('skip');
      expect([...names].sort()).toEqual([...reference.filters].sort());
    },
  );

  it('sends only take and skip for a list without filters', async () => {
    const { query } = await sent(() => api.invoices());

    expect(query).toEqual([
      ['skip', '0'],
      ['take', '1000'],
    ]);
  });
});
