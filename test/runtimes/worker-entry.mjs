/**
 * The Worker that runs the smoke suite inside workerd: POST it the fixtures, it answers with the
 * report. Bundled by `workerd.mjs` from the built package, imported by its own name.
 * @module
 */

import { createReceiver } from 'schoolhooks';
import { fetchHandler } from 'schoolhooks/fetch';
import { runSmoke } from './smoke.mjs';

export default {
  async fetch(/** @type {Request} */ request) {
    if (request.method !== 'POST') return new Response('POST the fixtures', { status: 405 });
    const fixtures = await request.json();
    return Response.json(await runSmoke({ createReceiver, fetchHandler, fixtures }));
  },
};
