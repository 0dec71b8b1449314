/**
 * `schoolhooks listen`: a development receiver that prints each delivery.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer, type RequestListener } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeListener } from '../adapters/node.js';
import { answerHeaders, sendJson } from '../adapters/adapter-kit.js';
import { getHeader } from '../receiving/request.js';
import { OUTCOMES } from '../receiving/outcome.js';
import {
  createReceiver,
  readTenant,
  type Receiver,
  type WebhookRequest,
} from '../receiving/receiver.js';
import { defineCommand, EXIT, messageOf, UsageError, type CliIo } from './command.js';
import {
  createInspector,
  INSPECTOR_PREFIX,
  isInspectorPath,
} from './inspector/create-inspector.js';
import { signatureFailureOf } from '../platform/signature-failure.js';
import { causesText } from './signature-causes.js';
import { wholeNumberOf } from './numbers.js';
import { SECRETS_OPTION, secretSource, secretsFrom } from './secret.js';
import {
  readSecretsFile,
  SECRETS_FILE_OPTION,
  TENANT_PLACEHOLDER,
  tenantOfUrl,
  tenantText,
  type TenantSecretMap,
} from './tenants.js';
import { summarizeEvent } from './summarize-event.js';
import { INSPECTOR_DEFAULTS } from '../defaults.js';
import { createWatchdog, type Watchdog } from '../watchdog/create-watchdog.js';

/** The `listen` command. */
export const listenCommand = defineCommand({
  name: 'listen',
  summary: 'Run a development receiver that prints each verified event (--ui: a page too)',
  usage: `[--port 3000] [--path /] [--ui [--keep ${INSPECTOR_DEFAULTS.keep}]] [--secret S]... [--secrets-file FILE]`,
  description: `Runs a receiver (createReceiver with its defaults and the memory store) on a node:http
server and prints one line per delivery: the status and outcome, the event, its
idempotencyKey and a short summary; what went wrong, if anything, indented under it. It answers as a real receiver does: duplicates 200,
bad signatures 401, invalid payloads 422. On a 401 it prints the likely causes.
Stops on Ctrl-C.

With --secrets-file, one endpoint serves many schools: it answers <path>/<tenant>
(--path /webhooks/school answers /webhooks/school/school-a), each delivery
verified with its tenant's secrets only; a tenant the file does not name is
answered 404 unknown_tenant. Each line names the tenant. The file is read once,
at start.

With --ui, the same port also serves the inspector, a page at /_schoolhooks/: every
delivery live, its body, headers and Zod issues, the likely causes of a 401, and
buttons to replay a delivery, copy it as curl, or send a signed fixture. It never
shows the secret, and keeps deliveries in memory only.`,
  options: {
    port: {
      type: 'string',
      value: 'N',
      default: '3000',
      help: 'Port to listen on; 0 picks a free one',
    },
    host: {
      type: 'string',
      value: 'H',
      help: 'Address to bind (default: every address; 127.0.0.1 with --ui)',
    },
    path: {
      type: 'string',
      value: 'P',
      help: 'The only path answered, others get 404 (default: every path). With --secrets-file: <path>/<tenant>, for each tenant (default /<tenant>)',
    },
    ui: { type: 'boolean', help: 'Serve the inspector page at /_schoolhooks/ on the same port' },
    keep: {
      type: 'string',
      value: 'N',
      default: String(INSPECTOR_DEFAULTS.keep),
      help: 'Deliveries the inspector keeps in memory',
    },
    secret: SECRETS_OPTION,
    'secrets-file': SECRETS_FILE_OPTION,
  },
  async run({ values }, io) {
    const port = wholeNumberOf(values.port);
    if (port === undefined || port < 0 || port > 65_535) {
      throw new UsageError('--port must be a port number (0 to 65535)');
    }
    if (values.path !== undefined && !values.path.startsWith('/')) {
      throw new UsageError('--path must start with /');
    }
    const keep = wholeNumberOf(values.keep);
    if (keep === undefined || keep < 1) {
      throw new UsageError('--keep must be a whole number of deliveries, 1 or more');
    }
    if (values.path !== undefined && isInspectorPath(values.path)) {
      throw new UsageError(`--path must not be below ${INSPECTOR_PREFIX}, the inspector's own`);
    }
    const { secrets, tenants } = await listenSecrets(values.secret, values['secrets-file'], io);
    // The inspector acts (replays, sends) for whoever can reach it: only this machine, unless
    // --host says otherwise.
    const host = values.host ?? (values.ui ? '127.0.0.1' : undefined);

    // listen prints each delivery itself: the console logger would say it twice.
    const receiver = createReceiver({
      secret: tenants === undefined ? secrets : ({ tenant }) => tenants.get(tenant),
      logger: false,
    });
    // Every verified event is handled, so the receiver answers `processed` as a real one would.
    receiver.onAny(() => {});
    const answering = printing(receiver, io);
    const inspector = values.ui
      ? createInspector({
          receiver: answering,
          secrets,
          tenants,
          keep,
          receiverPath: values.path ?? '/',
          watchdogs: watchdogsOf(receiver, tenants),
        })
      : undefined;
    const perTenant = tenants !== undefined;
    const server = createServer(
      inspector === undefined
        ? deliveries(answering, values.path, perTenant)
        : (req, res) => {
            const url = req.url ?? '/';
            if (!isInspectorPath(url)) {
              const recording = inspector.recording({ path: url });
              return void deliveries(recording, values.path, perTenant)(req, res);
            }
            inspector.serve(req, res).catch((error: unknown) => {
              io.err(`  inspector: ${messageOf(error)}`);
              if (!res.headersSent) res.writeHead(500);
              res.end();
            });
          },
    );
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, resolve);
    }).catch((error: unknown) => {
      throw new UsageError(`cannot listen on port ${port}: ${(error as Error).message}`);
    });
    const { port: bound } = server.address() as AddressInfo;
    const origin = `http://${urlHost(host ?? 'localhost')}:${bound}`;
    io.out(
      tenants === undefined
        ? `Listening on ${origin}${values.path ?? '/'} ` +
            `(secret from ${secretSource(values.secret)}); Ctrl-C to stop`
        : `Listening on ${origin}${basePath(values.path)}${TENANT_PLACEHOLDER} ` +
            `(${tenantsText(tenants, values['secrets-file'] ?? '')}); Ctrl-C to stop`,
    );
    if (inspector) {
      io.out(`Inspector on ${origin}${INSPECTOR_PREFIX}/ (keeps the last ${keep} deliveries)`);
    }
    await io.untilStopped();
    inspector?.close();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return EXIT.ok;
  },
});

/** The secrets `listen` verifies with: one endpoint's, or each tenant's (`--secrets-file`). */
interface ListenSecrets {
  /** The endpoint's secrets; empty with `--secrets-file`. */
  secrets: string[];
  /** Each tenant's secrets, with `--secrets-file`. */
  tenants: TenantSecretMap | undefined;
}

/** `--secret` (or the variable), or `--secrets-file`: never both. */
async function listenSecrets(
  secret: string[] | undefined,
  file: string | undefined,
  io: CliIo,
): Promise<ListenSecrets> {
  if (file === undefined) return { secrets: secretsFrom(secret, io, 'listen'), tenants: undefined };
  if (secret !== undefined) {
    throw new UsageError(
      '--secret and --secrets-file cannot go together: one endpoint secret, or one per tenant',
    );
  }
  return { secrets: [], tenants: await readSecretsFile(file, io, 'listen') };
}

/**
 * The listener of the receiver's deliveries: every path, or `--path` alone; with `--secrets-file`,
 * `<path>/<tenant>` (one path segment, percent-decoded), whose tenant the receiver is given. Any
 * other path is answered 404 `not_found`, as nodeListener answers a path it does not serve.
 */
function deliveries(
  receiver: Receiver,
  path: string | undefined,
  perTenant: boolean,
): RequestListener {
  if (!perTenant) return nodeListener(receiver, path === undefined ? {} : { path });
  const base = path ?? '/';
  const tenantOf = (url: string | undefined): string | undefined => tenantOfUrl(base, url ?? '/');
  const answer = nodeListener(receiver, { tenant: (req) => tenantOf(req.url) });
  return (req, res) => {
    if (tenantOf(req.url) !== undefined) return void answer(req, res);
    sendJson(res, 404, answerHeaders(404), { ok: false, error: 'not_found' });
  };
}

/** `--path` with a trailing slash, where the tenant's segment follows. */
function basePath(path: string | undefined): string {
  if (path === undefined) return '/';
  return path.endsWith('/') ? path : `${path}/`;
}

/** `secrets of tenants a, b from tenants.json`: the first few tenant names, never a secret. */
function tenantsText(tenants: TenantSecretMap, file: string): string {
  const names = [...tenants.keys()];
  const shown = names.slice(0, 5).map(tenantText).join(', ');
  const more = names.length > 5 ? ` and ${names.length - 5} more` : '';
  return `secrets of tenants ${shown}${more} from ${file}`;
}

/**
 * The receiver, printing each delivery it answers: the status line first (with its tenant, if
 * any), then its detail lines (what `onError` reported while answering it, the likely causes of a
 * 401) indented under it, in one write so concurrent deliveries never interleave.
 */
function printing(receiver: Receiver, io: CliIo): Receiver {
  const details = new AsyncLocalStorage<string[]>();
  receiver.onError((error) => {
    if (error.code === 'invalid_signature') return;
    const line = `${error.code}: ${error.message}`;
    const lines = details.getStore();
    // Reported outside any delivery's answer (none today): printed at once, still indented.
    if (lines === undefined) io.err(indent([line]));
    else lines.push(line);
  });
  return {
    ...receiver,
    maxBodyBytes: receiver.maxBodyBytes,
    async handle(given: WebhookRequest) {
      // Read once here: the line shows it, and the receiver gets the string.
      const request = { ...given, tenant: readTenant(given.tenant) };
      let raw: unknown = request.body;
      const { body } = request;
      const observed: WebhookRequest =
        typeof body === 'function'
          ? { ...request, body: async (limit: number) => (raw = await body(limit)) }
          : request;
      const lines: string[] = [];
      const result = await details.run(lines, () => receiver.handle(observed));
      const { tenant } = request;
      let status = `${result.status} ${result.outcome}`;
      if (typeof tenant === 'string') status = `${status} tenant=${tenantText(tenant)}`;
      if (result.outcome === 'invalid_signature') {
        // The receiver's own classifier: what onError, the inspector and telemetry say too.
        const failure = signatureFailureOf(getHeader(request.headers, 'signature'));
        lines.unshift(failure.message, ...causesText(failure).split('\n'));
      } else if (OUTCOMES[result.outcome].verified) {
        status = `${status} ${describe(raw)}`;
      }
      io.out(lines.length === 0 ? status : `${status}\n${indent(lines)}`);
      return result;
    },
  };
}

/** Detail lines under a status line: each line of each, indented. */
function indent(lines: readonly string[]): string {
  return lines
    .flatMap((line) => line.split('\n'))
    .map((line) => `  ${line}`)
    .join('\n');
}

/** A host as it goes in a URL: an IPv6 address in brackets; every address (0.0.0.0, ::) as localhost. */
function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/** `Event key=… summary` of a verified body. */
function describe(raw: unknown): string {
  const text =
    typeof raw === 'string' ? raw : raw instanceof Uint8Array ? new TextDecoder().decode(raw) : '';
  let envelope: unknown;
  try {
    envelope = JSON.parse(text);
  } catch {
    return '';
  }
  const { event, idempotencyKey, data } = envelope as Record<string, unknown>;
  const summary = summarizeEvent(data);
  return `${String(event)} key=${String(idempotencyKey)}${summary ? ` ${summary}` : ''}`;
}

/**
 * The inspector's watchdogs: one on the receiver (the receiver itself, not a wrapper of it, so each
 * check first writes the answers not yet written), or one a tenant of the file.
 */
function watchdogsOf(receiver: Receiver, tenants: TenantSecretMap | undefined): Watchdog[] {
  return tenants === undefined
    ? [createWatchdog({ receiver })]
    : [...tenants.keys()].map((tenant) => createWatchdog({ receiver, tenant }));
}
