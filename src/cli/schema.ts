/**
 * `schoolhooks schema`: the JSON Schema of one event's envelope and data, or of every event.
 * @module
 */

import { z } from 'zod';
import {
  envelopeSchema,
  eventDataSchemas,
  isFixedContractEvent,
  type KnownEventName,
} from '../platform/events/index.js';
import { didYouMean } from '../utils/nearest-name.js';
import { defineCommand, EXIT, UsageError } from './command.js';
import { isEventName, KNOWN_EVENTS } from './event-names.js';

const DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** The `schema` command. */
export const schemaCommand = defineCommand({
  name: 'schema',
  summary: 'Print the JSON Schema of one event or all',
  usage: '[EventName]',
  description: `Prints the JSON Schema (draft 2020-12) of an event's envelope (event, timestamp,
idempotencyKey, data), with its data schema: what the receiver accepts. Without a name,
one document with every event in $defs and a oneOf over them. Events without a data
contract have data: object.

Events: ${KNOWN_EVENTS.join(', ')}`,
  options: {},
  positionals: true,
  async run({ positionals }, io) {
    if (positionals.length > 1) throw new UsageError('give at most one event name');
    const [name] = positionals;
    if (name === undefined) {
      io.out(JSON.stringify(allEventsSchema(), null, 2));
      return EXIT.ok;
    }
    if (!isEventName(name)) {
      const near = didYouMean(name, KNOWN_EVENTS);
      throw new UsageError(
        near === ''
          ? `${name} is not an event of the platform; one of: ${KNOWN_EVENTS.join(', ')}`
          : `${name} is not an event of the platform${near}`,
      );
    }
    io.out(JSON.stringify({ $schema: DRAFT, ...eventSchema(name) }, null, 2));
    return EXIT.ok;
  },
});

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
