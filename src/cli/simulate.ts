/**
 * `schoolhooks simulate`: the platform simulator against a real receiver, time compressed.
 * @module
 */

import { FIXED_CONTRACT_EVENTS, type FixedEventName } from '../platform/events/index.js';
import { createPlatformSimulator } from '../testing/platform-simulator.js';
import type { DeliveryLogEntry } from '../testing/simulator-types.js';
import { createVirtualClock } from '../testing/virtual-clock.js';
import { PLATFORM_LIMITS, SUCCESS_STATUSES_TEXT } from '../platform/platform-contract.js';
import { defineCommand, EXIT, requireHttpUrl, UsageError } from './command.js';
import { durationOf, formatDuration } from './duration.js';
import { decimalOf, wholeNumberOf } from './numbers.js';
import { SECRET_OPTION, secretFrom } from './secret.js';

const { responseTimeoutMs, maxAttempts, retryDelaysMs, retrySpanMs } = PLATFORM_LIMITS;
const DELAYS = `${retryDelaysMs.slice(0, -1).map(formatDuration).join(', ')} and ${formatDuration(retryDelaysMs.at(-1) ?? 0)}`;

/** The `simulate` command. */
export const simulateCommand = defineCommand({
  name: 'simulate',
  summary: 'Run the platform simulator against a URL, time compressed',
  usage: '--url URL [--events 20] [--faults 0.3] [--seed 1] [--down-for 5h] [--secret S]',
  description: `Delivers events to the receiver at URL as the platform does: the fixtures in turn, each
with a new idempotencyKey, signed with the secret; success only on ${SUCCESS_STATUSES_TEXT} within
${formatDuration(responseTimeoutMs)}; up to ${maxAttempts} attempts, ${DELAYS} after each failed one.
Time is virtual: the ${formatDuration(retrySpanMs)} of retries take as long as the requests do.
With --faults, that share of attempts has its answer dropped, delayed past the timeout,
duplicated or reordered. With --down-for, the receiver is taken as down for that long from the
start: every attempt then fails unsent, as a refused connection, and an outage longer than the
retries loses the events sent in it.
Prints one line per request and a summary.
Exit code 0 when every event was delivered, 1 otherwise.`,
  options: {
    url: { type: 'string', value: 'URL', help: 'The receiver (required)' },
    secret: SECRET_OPTION,
    events: { type: 'string', value: 'N', default: '20', help: 'How many events to send' },
    faults: {
      type: 'string',
      value: 'RATE',
      default: '0',
      help: 'Share of attempts with an injected fault, 0 to 1',
    },
    seed: {
      type: 'string',
      value: 'N',
      default: '1',
      help: 'Seed of the faults, to repeat a run exactly',
    },
    'down-for': {
      type: 'string',
      value: 'DURATION',
      help: 'Keep the receiver down this long from the start (5h, 2h 30m)',
    },
  },
  async run({ values }, io) {
    const url = requireHttpUrl(values.url);
    if (url.length > PLATFORM_LIMITS.maxFieldLength) {
      // The platform's form refuses a longer endpoint URL, and so does the simulator.
      throw new UsageError(
        `--url is longer than ${PLATFORM_LIMITS.maxFieldLength} characters, the platform's limit for an endpoint's URL`,
      );
    }
    const count = wholeNumberOf(values.events);
    if (count === undefined || count < 1 || count > 100_000) {
      throw new UsageError('--events must be a whole number from 1 to 100000');
    }
    const rate = decimalOf(values.faults);
    if (rate === undefined || rate > 1)
      throw new UsageError('--faults must be a number from 0 to 1');
    const seed = wholeNumberOf(values.seed);
    if (seed === undefined) throw new UsageError('--seed must be a whole number');
    const downFor = values['down-for'];
    const downForMs = downFor === undefined ? undefined : durationOf(downFor);
    if (downFor !== undefined && !downForMs) {
      throw new UsageError('--down-for must be a duration of 1s or more, such as 5h or 2h 30m');
    }
    const secret = secretFrom(values.secret, io, 'simulate');

    const clock = createVirtualClock();
    const start = clock.now();
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [{ id: 'cli', url, secret, events: [...FIXED_CONTRACT_EVENTS] }],
      faults: { rate, seed },
      onAttempt: (entry) => io.out(formatEntry(entry, start)),
    });
    if (downForMs) simulator.takeDown('cli', { forMs: downForMs });
    for (let i = 0; i < count; i++) {
      simulator.send(FIXED_CONTRACT_EVENTS[i % FIXED_CONTRACT_EVENTS.length] as FixedEventName);
    }
    await simulator.run();

    const { deliveries, log } = simulator;
    const delivered = deliveries.filter((delivery) => delivery.state === 'delivered').length;
    const faults = new Map<string, number>();
    for (const entry of log)
      if (entry.fault) faults.set(entry.fault, (faults.get(entry.fault) ?? 0) + 1);
    const faultText = [...faults].map(([kind, n]) => `${n} ${kind}`).join(', ');
    io.out(
      `${plural(count, 'event')}, ${plural(log.length, 'request')} over ${formatDuration(clock.now() - start)} of platform time: ` +
        `${delivered} delivered, ${count - delivered} failed${faultText ? `; faults: ${faultText}` : ''}`,
    );
    return delivered === count ? EXIT.ok : EXIT.failure;
  },
});

/** `+11m  CourseCompleted  attempt 2  ok   200 processed  <key>` */
function formatEntry(entry: DeliveryLogEntry, start: number): string {
  const seen =
    entry.status === null
      ? `${entry.error ?? 'no answer'}${entry.outcome ? ` (the receiver answered ${entry.outcome})` : ''}`
      : `${entry.status}${entry.outcome ? ` ${entry.outcome}` : ''}`;
  const fault =
    entry.fault && entry.fault !== 'drop' && entry.fault !== 'delay' ? ` [${entry.fault}]` : '';
  return (
    `${`+${formatDuration(entry.at - start)}`.padEnd(9)} ${entry.event.padEnd(29)} attempt ${entry.attempt}  ` +
    `${entry.ok ? 'ok  ' : 'FAIL'} ${seen}${fault}  ${entry.idempotencyKey}`
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}
