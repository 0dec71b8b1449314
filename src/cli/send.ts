/**
 * `schoolhooks send`: one signed delivery of a fixture or a JSON file to a URL.
 * @module
 */

import { timestampMsOf } from '../envelope.js';
import { FIXED_CONTRACT_EVENTS } from '../events/index.js';
import { defineCommand, EXIT, requireHttpUrl, UsageError } from './command.js';
import { fileBody, fixtureBody, type DeliveryBody } from './delivery-body.js';
import { checkEventOption, isEventName } from './event-names.js';
import { postDelivery } from './post-delivery.js';
import { SECRET_OPTION, secretFrom } from './secret.js';

/** The `send` command. */
export const sendCommand = defineCommand({
  name: 'send',
  summary: 'Send one signed delivery of a fixture or a JSON file to a URL',
  usage: '<EventName | file.json> --url URL [options]',
  description: `Sends one delivery as the platform does: a POST of the envelope with content-type
application/json and its signature header. Prints the answer's status and body.
Exit code 0 when the answer is 200, 201 or 202 (what the platform counts as delivered),
1 otherwise.

  EventName       The event's fixture, stamped now with a new idempotencyKey:
                  ${FIXED_CONTRACT_EVENTS.join(', ')}
  file.json       An envelope, stamped now with a new idempotencyKey (--raw: as it is),
                  or, with --event, the data of one`,
  options: {
    url: { type: 'string', value: 'URL', help: 'Where to POST (required)' },
    secret: SECRET_OPTION,
    event: {
      type: 'string',
      value: 'NAME',
      help: 'The file holds only data: send it as this event',
    },
    key: { type: 'string', value: 'KEY', help: 'The idempotencyKey to send' },
    timestamp: {
      type: 'string',
      value: 'T',
      help: `The timestamp to send (RFC 3339; default now). The same --key and
--timestamp twice give a duplicate; the same key with another body, a conflict`,
    },
    raw: { type: 'boolean', help: "Send the file's bytes exactly as they are, only signed" },
  },
  positionals: true,
  async run({ values, positionals }, io) {
    const [what, ...extra] = positionals;
    if (what === undefined) throw new UsageError('name an event or a file to send');
    if (extra.length > 0)
      throw new UsageError('send takes one event or file; use replay for a folder');
    const url = requireHttpUrl(values.url);
    // The receiver's own timestamp rule, so a sent delivery is never refused for its timestamp.
    if (values.timestamp !== undefined && timestampMsOf(values.timestamp) === undefined) {
      throw new UsageError('--timestamp must be an RFC 3339 date-time (2026-11-01T10:00:00Z)');
    }
    checkEventOption(values.event);

    const delivery: DeliveryBody = isEventName(what)
      ? fixtureBody(what, values.key, values.timestamp)
      : await fileBody(what, {
          raw: values.raw,
          event: values.event,
          key: values.key,
          timestamp: values.timestamp,
        });
    const secret = secretFrom(values.secret, io, 'send');
    const result = await postDelivery(url, delivery.body, secret);
    io.out(`${result.status} ${delivery.event ?? what}`);
    if (result.text !== '') io.out(result.text);
    return result.ok ? EXIT.ok : EXIT.failure;
  },
});
