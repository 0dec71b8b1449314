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
import { shellQuote } from './inspector/delivery-view.js';
import { SECRET_OPTION, secretFrom } from './secret.js';
import { SUCCESS_STATUSES_TEXT } from '../platform-contract.js';

/** The `send` command. */
export const sendCommand = defineCommand({
  name: 'send',
  summary: 'Send one signed delivery of a fixture or a JSON file to a URL',
  usage: '<EventName | file.json> --url URL [options]',
  description: `Sends one delivery as the platform does: a POST of the envelope with content-type
application/json and its signature header. Prints the answer's status and body, then what
it sent (the event, idempotencyKey and timestamp; never the signature) and the command that
sends it again, with the same --key and --timestamp: a duplicate to the receiver.
Exit code 0 when the answer is ${SUCCESS_STATUSES_TEXT} (what the platform counts as delivered),
1 otherwise.

  EventName       The event's fixture, stamped now with a new idempotencyKey:
                  ${FIXED_CONTRACT_EVENTS.join(', ')}
  file.json       An envelope, stamped now with a new idempotencyKey (--raw: as it is), or, with --event, the data of one`,
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
      help: 'The timestamp to send (RFC 3339; default now). The same --key and --timestamp twice give a duplicate; the same key with another body, a conflict',
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
    const sent = sentLines(delivery, { what, url, event: values.event, raw: values.raw });
    let result;
    try {
      result = await postDelivery(url, delivery.body, secret);
    } catch (error) {
      // No answer (a timeout, a refused connection): the platform would send the same again.
      io.out(sent);
      throw error;
    }
    io.out(`${result.status} ${delivery.event ?? what}`);
    if (result.text !== '') io.out(result.text);
    io.out(sent);
    return result.ok ? EXIT.ok : EXIT.failure;
  },
});

/** What `send` was given besides the body, to write the command that sends it again. */
interface Given {
  what: string;
  url: string;
  event: string | undefined;
  raw: boolean | undefined;
}

/**
 * What was sent (the event, the idempotencyKey and the timestamp as they are in the body; never
 * the signature) and the command that sends the same bytes again, which a receiver answers as a
 * duplicate: the same arguments, with the key and timestamp this run stamped.
 */
function sentLines(delivery: DeliveryBody, given: Given): string {
  const envelope = envelopeOf(delivery.body);
  const key = envelope?.['idempotencyKey'];
  const timestamp = envelope?.['timestamp'];
  const fields = [
    `sent ${delivery.event ?? given.what}`,
    `idempotencyKey=${typeof key === 'string' ? readable(key) : '(none)'}`,
    `timestamp=${typeof timestamp === 'string' ? readable(timestamp) : '(none)'}`,
  ];
  const again = ['schoolhooks', 'send', given.what, '--url', given.url];
  if (given.event !== undefined) again.push('--event', given.event);
  if (given.raw) again.push('--raw');
  // A raw file goes as it is: the same command sends the same bytes.
  else {
    if (typeof key === 'string') again.push('--key', key);
    if (typeof timestamp === 'string') again.push('--timestamp', timestamp);
  }
  return `${fields.join(' ')}\nresend: ${again.map(shellWord).join(' ')}`;
}

/** The top-level fields of a JSON object body, else undefined. */
function envelopeOf(body: string | Uint8Array): Record<string, unknown> | undefined {
  try {
    const json: unknown = JSON.parse(
      typeof body === 'string' ? body : new TextDecoder().decode(body),
    );
    return typeof json === 'object' && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A value as it is when plain, else as a JSON string, so spaces and empty values show. */
function readable(value: string): string {
  return PLAIN.test(value) ? value : JSON.stringify(value);
}

/** A word of the resend command: as it is when plain, else quoted for a POSIX shell. */
function shellWord(value: string): string {
  return PLAIN.test(value) ? value : shellQuote(value);
}

const PLAIN = /^[\w@%+=:,./-]+$/;
