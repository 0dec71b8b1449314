/**
 * Headless Chromium for the inspector's end-to-end test and screenshots: Debian's `chromium`
 * package, driven by playwright-core (browser downloads are not reachable here; CI installs the
 * package, see .ci/run).
 * @module
 */

import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Where Debian's chromium package puts the browser. */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Start headless Chromium, with a fresh profile (Playwright makes a new user-data-dir for every
 * launch) and without the background traffic a closed network refuses. Throws, never skips, when
 * the browser is not installed.
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) {
    throw new Error(
      `Chromium is not installed at ${CHROMIUM_PATH}: the inspector's end-to-end test needs it. ` +
        'Install it with: apt-get install -y --no-install-recommends chromium (.ci/run does).',
    );
  }
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
