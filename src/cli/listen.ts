/**
 * `schoolhooks listen`: a development receiver that prints each delivery.
 * @module
 */

import { AsyncLocalStorage } from 'node:async_hooks';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { nodeListener } from '../../adapters/node.js';
import { getHeader } from '../headers.js';
import { OUTCOMES } from '../outcome.js';
import { createReceiver, type Receiver, type WebhookRequest } from '../receiver.js';
import { defineCommand, EXIT, messageOf, UsageError, type CliIo } from './command.js';
import {
  createInspector,
  INSPECTOR_PREFIX,
  isInspectorPath,
} from './inspector/create-inspector.js';
import { signatureFailureOf } from '../signature-failure.js';
import { causesText } from './signature-causes.js';
import { wholeNumberOf } from './numbers.js';
import { SECRETS_OPTION, secretSource, secretsFrom } from './secret.js';
import { summarizeEvent } from './summarize-event.js';
import { INSPECTOR_DEFAULTS } from '../defaults.js';

/** The `listen` command. */
export const listenCommand = defineCommand({
  name: 'listen',
  summary: 'Run a development receiver that prints each verified event (--ui: a page too)',
  usage: `[--port 3000] [--path /] [--ui [--keep ${INSPECTOR_DEFAULTS.keep}]] [--secret S]...`,
  description: `Runs a receiver (createReceiver with its defaults and the memory store) on a node:http
server and prints one line per delivery: the status and outcome, the event, its
idempotencyKey and a short summary; what went wrong, if anything, indented under it. It answers as a real receiver does: duplicates 200,
bad signatures 401, invalid payloads 422. On a 401 it prints the likely causes.
Stops on Ctrl-C.

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
      help: 'The only path answered, others get 404 (default: every path)',
    },
    ui: { type: 'boolean', help: 'Serve the inspector page at /_schoolhooks/ on the same port' },
    keep: {
      type: 'string',
      value: 'N',
      default: String(INSPECTOR_DEFAULTS.keep),
      help: 'Deliveries the inspector keeps in memory',
    },
    secret: SECRETS_OPTION,
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
    const secrets = secretsFrom(values.secret, io, 'listen');
    // The inspector acts (replays, sends) for whoever can reach it: only this machine, unless
    // --host says otherwise.
    const host = values.host ?? (values.ui ? '127.0.0.1' : undefined);

    // listen prints each delivery itself: the console logger would say it twice.
    const receiver = createReceiver({ secret: secrets, logger: false });
    // Every verified event is handled, so the receiver answers `processed` as a real one would.
    receiver.onAny(() => {});
    const answering = printing(receiver, io);
    const only = values.path === undefined ? {} : { path: values.path };
    const inspector = values.ui
      ? createInspector({ receiver: answering, secrets, keep, receiverPath: values.path ?? '/' })
      : undefined;
    const server = createServer(
      inspector === undefined
        ? nodeListener(answering, only)
        : (req, res) => {
            const url = req.url ?? '/';
            if (!isInspectorPath(url)) {
              return void nodeListener(inspector.recording({ path: url }), only)(req, res);
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
      `Listening on ${origin}${values.path ?? '/'} ` +
        `(secret from ${secretSource(values.secret)}); Ctrl-C to stop`,
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

/**
 * The receiver, printing each delivery it answers: the status line first, then its detail lines
 * (what `onError` reported while answering it, the likely causes of a 401) indented under it, in
 * one write so concurrent deliveries never interleave.
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
    async handle(request: WebhookRequest) {
      let raw: unknown = request.body;
      const { body } = request;
      const observed: WebhookRequest =
        typeof body === 'function'
          ? { ...request, body: async (limit: number) => (raw = await body(limit)) }
          : request;
      const lines: string[] = [];
      const result = await details.run(lines, () => receiver.handle(observed));
      let status = `${result.status} ${result.outcome}`;
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
