/**
 * Runs the smoke suite in the current runtime (Node, Bun or Deno) against the built package,
 * imported by its own name through the `exports` map, then the body rules over real HTTP on the
 * runtime's own server (`http-smoke.mjs`), and prints the report as one JSON line.
 * @module
 */

import { createReceiver } from 'schoolhooks';
import { fetchHandler } from 'schoolhooks/fetch';
import { loadFixtures } from './fixtures.mjs';
import { runHttpSmoke } from './http-smoke.mjs';
import { REPORT_PREFIX, runSmoke } from './smoke.mjs';

const fixtures = loadFixtures();
const report = await runSmoke({ createReceiver, fetchHandler, fixtures });
const envelope = fixtures.valid.find(({ name }) => name === 'UserSignedUp')?.envelope;
if (envelope === undefined) throw new Error('fixtures/UserSignedUp.json is missing');
const http = await runHttpSmoke({ createReceiver, fetchHandler, envelope });
report.results.push(...http);
report.ok = report.results.every((result) => result.ok);
console.log(REPORT_PREFIX + JSON.stringify(report));
