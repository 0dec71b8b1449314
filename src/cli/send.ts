/**
 * `schoolhooks send`: one signed delivery of a fixture or a JSON file to a URL.
 * @module
 */

import { FIXED_CONTRACT_EVENTS, timestampMsOf } from '../platform/events/index.js';
import { defineCommand, EXIT, requireHttpUrl, UsageError, type CliIo } from './command.js';
import { fileBody, fixtureBody, type DeliveryBody } from './delivery-body.js';
import { checkEventOption, isEventName } from './event-names.js';
import { postDelivery } from './post-delivery.js';
import { shellQuote } from './inspector/delivery-view.js';
import { SECRET_OPTION, secretFrom } from './secret.js';
import {
  quotedTenant,
  readSecretsFile,
  SECRETS_FILE_OPTION,
  TENANT_PLACEHOLDER,
  tenantNameProblem,
  tenantText,
  tenantUrl,
} from './tenants.js';
import { SUCCESS_STATUSES_TEXT } from '../platform/platform-contract.js';

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

With --tenant, the delivery goes to one tenant (school) of an endpoint that serves
many: to --url with the tenant appended as its last path segment
(percent-encoded), or put where --url holds {tenant}; signed with --secret, or
with the tenant's first secret in --secrets-file. What it prints names the
tenant, and the command that sends it again has --tenant.

  EventName       The event's fixture, stamped now with a new idempotencyKey:
                  ${FIXED_CONTRACT_EVENTS.join(', ')}
  file.json       An envelope, stamped now with a new idempotencyKey (--raw: as it is), or, with --event, the data of one`,
  options: {
    url: { type: 'string', value: 'URL', help: 'Where to POST (required)' },
    secret: SECRET_OPTION,
    tenant: {
      type: 'string',
      value: 'NAME',
      help: 'The tenant to send to: the last path segment of --url, or where it holds {tenant}',
    },
    'secrets-file': {
      ...SECRETS_FILE_OPTION,
      help: "Sign with the --tenant's first secret from this file (a JSON object mapping each tenant to its secret or list of secrets), instead of --secret",
    },
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
    const { tenant } = values;
    const url = sendUrl(values.url, tenant);
    const secretsFile = values['secrets-file'];
    if (secretsFile !== undefined && tenant === undefined) {
      throw new UsageError('--secrets-file needs --tenant: the tenant whose secret signs it');
    }
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
    const secret =
      secretsFile === undefined || tenant === undefined
        ? secretFrom(values.secret, io, 'send')
        : await tenantSecret(secretsFile, tenant, values.secret, io);
    const sent = sentLines(delivery, {
      what,
      url: values.url ?? url,
      event: values.event,
      raw: values.raw,
      tenant,
      secretsFile,
    });
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

/**
 * The URL to post to: `--url`, with `--tenant` put where it holds `{tenant}` or appended as its
 * last path segment, percent-encoded.
 */
function sendUrl(given: string | undefined, tenant: string | undefined): string {
  if (tenant === undefined) {
    if (given?.includes(TENANT_PLACEHOLDER)) {
      throw new UsageError(`--url holds ${TENANT_PLACEHOLDER}: name the tenant with --tenant`);
    }
    return requireHttpUrl(given);
  }
  const problem = tenantNameProblem(tenant);
  if (problem !== undefined) throw new UsageError(`--tenant: ${problem}`);
  return requireHttpUrl(tenantUrl(requireHttpUrl(given), tenant));
}

/** The first secret of `tenant` in `--secrets-file` (never with `--secret`). */
async function tenantSecret(
  file: string,
  tenant: string,
  secret: string | undefined,
  io: Pick<CliIo, 'err'>,
): Promise<string> {
  if (secret !== undefined) {
    throw new UsageError('--secret and --secrets-file cannot go together: sign with one of them');
  }
  const tenants = await readSecretsFile(file, io, 'send');
  const own = tenants.get(tenant);
  if (own?.[0] === undefined) {
    throw new UsageError(`--secrets-file ${file} has no tenant ${quotedTenant(tenant)}`);
  }
  return own[0];
}

/** What `send` was given besides the body, to write the command that sends it again. */
interface Given {
  what: string;
  /** `--url` as given (with `{tenant}`, if it held it). */
  url: string;
  event: string | undefined;
  raw: boolean | undefined;
  tenant: string | undefined;
  secretsFile: string | undefined;
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
    ...(given.tenant === undefined ? [] : [`tenant=${tenantText(given.tenant)}`]),
    `idempotencyKey=${typeof key === 'string' ? readable(key) : '(none)'}`,
    `timestamp=${typeof timestamp === 'string' ? readable(timestamp) : '(none)'}`,
  ];
  const again = ['schoolhooks', 'send', given.what, '--url', given.url];
  if (given.tenant !== undefined) again.push('--tenant', given.tenant);
  if (given.secretsFile !== undefined) again.push('--secrets-file', given.secretsFile);
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
