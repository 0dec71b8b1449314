/**
 * Runs the smoke suite in the current runtime (Node, Bun or Deno) against the built package,
 * imported by its own name through the `exports` map, and prints the report as one JSON line.
 * @module
 */

import { createReceiver } from 'schoolhooks';
import { fetchHandler } from 'schoolhooks/fetch';
import { loadFixtures } from './fixtures.mjs';
import { REPORT_PREFIX, runSmoke } from './smoke.mjs';

const report = await runSmoke({ createReceiver, fetchHandler, fixtures: loadFixtures() });
console.log(REPORT_PREFIX + JSON.stringify(report));
