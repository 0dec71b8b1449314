/**
 * `schoolhooks schema`: the JSON Schema of one event's envelope and data, or of every event.
 * @module
 */

import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  envelopeSchema,
  eventDataSchemas,
  FIXED_CONTRACT_EVENTS,
  isFixedContractEvent,
  UNCONTRACTED_EVENTS,
  type KnownEventName,
} from '../events/index.js';
import { EXIT, parseOrUsage, UsageError, type CliCommand } from './command.js';

const KNOWN_EVENTS: readonly KnownEventName[] = [...FIXED_CONTRACT_EVENTS, ...UNCONTRACTED_EVENTS];
const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** The `schema` command. */
export const schemaCommand: CliCommand = {
  name: 'schema',
  summary: 'Print the JSON Schema of one event or all',
  help: `Usage: schoolhooks schema [EventName]

Prints the JSON Schema (draft 2020-12) of an event's envelope (event, timestamp,
idempotencyKey, data), with its data schema: what the receiver accepts. Without a name,
one document with every event in $defs and a oneOf over them. Events without a data
contract have data: object.

Events: ${KNOWN_EVENTS.join(', ')}

Options:
  -h, --help      Show this help`,
  async run(args, io) {
    const { values, positionals } = parseOrUsage(() =>
      parseArgs({
        args: [...args],
        options: { help: { type: 'boolean', short: 'h' } },
        allowPositionals: true,
      }),
    );
    if (values.help) {
      io.out(schemaCommand.help);
      return EXIT.ok;
    }
    if (positionals.length > 1) throw new UsageError('give at most one event name');
    const [name] = positionals;
    if (name === undefined) {
      io.out(JSON.stringify(allEventsSchema(), null, 2));
      return EXIT.ok;
    }
    if (!isKnownEvent(name)) {
      throw new UsageError(
        `${name} is not an event of the platform; one of: ${KNOWN_EVENTS.join(', ')}`,
      );
    }
    io.out(JSON.stringify({ $schema: DRAFT, ...eventSchema(name) }, null, 2));
    return EXIT.ok;
  },
};

/** The JSON Schema of one event's envelope, without `$schema`. */
export function eventSchema(name: KnownEventName): Record<string, unknown> {
  const schema = isFixedContractEvent(name)
    ? envelopeSchema.extend({ event: z.literal(name), data: eventDataSchemas[name] })
    : envelopeSchema.extend({ event: z.literal(name) });
  // 'input': what a body must look like to be accepted, before any parsing transforms it.
  const { $schema: _, ...json } = z.toJSONSchema(schema, { io: 'input' }) as Record<
    string,
    unknown
  >;
  return { title: name, ...json };
}

function allEventsSchema(): Record<string, unknown> {
  return {
    $schema: DRAFT,
    title: 'School platform webhook',
    oneOf: KNOWN_EVENTS.map((name) => ({ $ref: `#/$defs/${name}` })),
    $defs: Object.fromEntries(KNOWN_EVENTS.map((name) => [name, eventSchema(name)])),
  };
}

function isKnownEvent(name: string): name is KnownEventName {
  return (KNOWN_EVENTS as readonly string[]).includes(name);
}
