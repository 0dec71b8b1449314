/**
 * `schoolhooks simulate`: the platform simulator against a real receiver, time compressed.
 * @module
 */

import { parseArgs } from 'node:util';
import { FIXED_CONTRACT_EVENTS, type FixedEventName } from '../events/index.js';
import { createPlatformSimulator } from '../testing/platform-simulator.js';
import type { DeliveryLogEntry } from '../testing/simulator-types.js';
import { createVirtualClock } from '../testing/virtual-clock.js';
import { EXIT, parseOrUsage, requireHttpUrl, UsageError, type CliCommand } from './command.js';
import { SECRET_HELP, secretFrom } from './secret.js';

/** The `simulate` command. */
export const simulateCommand: CliCommand = {
  name: 'simulate',
  summary: 'Run the platform simulator against a URL, time compressed',
  help: `Usage: schoolhooks simulate --url URL [--events 20] [--faults 0.3] [--seed 1] [--secret S]

Delivers events to the receiver at URL as the platform does: the fixtures in turn, each
with a new idempotencyKey, signed with the secret; success only on 200, 201 or 202 within
15 s; up to 5 attempts, 11, 33, 77 and 165 minutes after each failed one. Time is virtual:
the 4 h 46 min of retries take as long as the requests do. With --faults, that share of
attempts has its answer dropped, delayed past the timeout, duplicated or reordered.
Prints one line per request and a summary.
Exit code 0 when every event was delivered, 1 otherwise.

Options:
  --url URL       The receiver (required)
${SECRET_HELP}
  --events N      How many events to send (default 20)
  --faults RATE   Share of attempts with an injected fault, 0 to 1 (default 0)
  --seed N        Seed of the faults, to repeat a run exactly (default 1)
  -h, --help      Show this help`,
  async run(args, io) {
    const { values } = parseOrUsage(() =>
      parseArgs({
        args: [...args],
        options: {
          url: { type: 'string' },
          secret: { type: 'string' },
          events: { type: 'string', default: '20' },
          faults: { type: 'string', default: '0' },
          seed: { type: 'string', default: '1' },
          help: { type: 'boolean', short: 'h' },
        },
      }),
    );
    if (values.help) {
      io.out(simulateCommand.help);
      return EXIT.ok;
    }
    const url = requireHttpUrl(values.url);
    const count = Number(values.events);
    if (!Number.isInteger(count) || count < 1 || count > 100_000) {
      throw new UsageError('--events must be a whole number from 1 to 100000');
    }
    const rate = Number(values.faults);
    if (!(rate >= 0 && rate <= 1)) throw new UsageError('--faults must be a number from 0 to 1');
    const seed = Number(values.seed);
    if (!Number.isInteger(seed)) throw new UsageError('--seed must be a whole number');
    const secret = secretFrom(values.secret, io.env);

    const clock = createVirtualClock();
    const start = clock.now();
    const simulator = createPlatformSimulator({
      clock,
      endpoints: [{ id: 'cli', url, secret, events: [...FIXED_CONTRACT_EVENTS] }],
      faults: { rate, seed },
      onAttempt: (entry) => io.out(formatEntry(entry, start)),
    });
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
      `${plural(count, 'event')}, ${plural(log.length, 'request')} over ${elapsed(clock.now() - start)} of platform time: ` +
        `${delivered} delivered, ${count - delivered} failed${faultText ? `; faults: ${faultText}` : ''}`,
    );
    return delivered === count ? EXIT.ok : EXIT.failure;
  },
};

/** `+0:11:00  CourseCompleted  attempt 2  ok   200 processed  <key>` */
function formatEntry(entry: DeliveryLogEntry, start: number): string {
  const seen =
    entry.status === null
      ? `${entry.error ?? 'no answer'}${entry.outcome ? ` (the receiver answered ${entry.outcome})` : ''}`
      : `${entry.status}${entry.outcome ? ` ${entry.outcome}` : ''}`;
  const fault =
    entry.fault && entry.fault !== 'drop' && entry.fault !== 'delay' ? ` [${entry.fault}]` : '';
  return (
    `+${elapsed(entry.at - start)}  ${entry.event.padEnd(29)} attempt ${entry.attempt}  ` +
    `${entry.ok ? 'ok  ' : 'FAIL'} ${seen}${fault}  ${entry.idempotencyKey}`
  );
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

/** h:mm:ss of a duration. */
function elapsed(ms: number): string {
  const seconds = Math.round(ms / 1000);
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = seconds % 60;
  return `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}`;
}
