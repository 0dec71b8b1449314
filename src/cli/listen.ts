/**
 * `schoolhooks listen`: a development receiver that prints each delivery.
 * @module
 */

import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { nodeListener } from '../../adapters/node.js';
import { getHeader } from '../headers.js';
import { OUTCOMES } from '../outcome.js';
import { createReceiver, type Receiver, type WebhookRequest } from '../receiver.js';
import {
  EXIT,
  messageOf,
  parseOrUsage,
  UsageError,
  type CliCommand,
  type CliIo,
} from './command.js';
import {
  createInspector,
  INSPECTOR_PREFIX,
  isInspectorPath,
} from './inspector/create-inspector.js';
import { SIGNATURE_CAUSES } from './signature-causes.js';
import { SECRET_HELP, secretSource, secretsFrom } from './secret.js';
import { summarizeEvent } from './summarize-event.js';

/** The `listen` command. */
export const listenCommand: CliCommand = {
  name: 'listen',
  summary: 'Run a development receiver that prints each verified event (--ui: a page too)',
  help: `Usage: schoolhooks listen [--port 3000] [--path /] [--ui [--keep 500]] [--secret S]...

Runs a receiver (createReceiver with its defaults and the memory store) on a node:http
server and prints one line per delivery: the status and outcome, the event, its
idempotencyKey and a short summary. It answers as a real receiver does: duplicates 200,
bad signatures 401, invalid payloads 422. On a 401 it prints the likely causes.
Stops on Ctrl-C.

With --ui, the same port also serves the inspector, a page at /_schoolhooks/: every
delivery live, its body, headers and Zod issues, the likely causes of a 401, and
buttons to replay a delivery, copy it as curl, or send a signed fixture. It never
shows the secret, and keeps deliveries in memory only.

Options:
  --port N        Port to listen on (default 3000; 0 picks a free one)
  --host H        Address to bind (default: every address; 127.0.0.1 with --ui)
  --path P        The only path answered, others get 404 (default: every path)
  --ui            Serve the inspector page at /_schoolhooks/ on the same port
  --keep N        Deliveries the inspector keeps in memory (default 500)
${SECRET_HELP}
                  Repeat --secret to accept several (every active endpoint's key)
  -h, --help      Show this help`,
  async run(args, io) {
    const { values } = parseOrUsage(() =>
      parseArgs({
        args: [...args],
        options: {
          port: { type: 'string', default: '3000' },
          host: { type: 'string' },
          path: { type: 'string' },
          ui: { type: 'boolean' },
          keep: { type: 'string', default: '500' },
          secret: { type: 'string', multiple: true },
          help: { type: 'boolean', short: 'h' },
        },
      }),
    );
    if (values.help) {
      io.out(listenCommand.help);
      return EXIT.ok;
    }
    const port = Number(values.port);
    if (!Number.isInteger(port) || port < 0 || port > 65_535) {
      throw new UsageError('--port must be a port number (0 to 65535)');
    }
    if (values.path !== undefined && !values.path.startsWith('/')) {
      throw new UsageError('--path must start with /');
    }
    const keep = Number(values.keep);
    if (!Number.isInteger(keep) || keep < 1) {
      throw new UsageError('--keep must be a whole number of deliveries, 1 or more');
    }
    if (values.path !== undefined && isInspectorPath(values.path)) {
      throw new UsageError(`--path must not be below ${INSPECTOR_PREFIX}, the inspector's own`);
    }
    const secrets = secretsFrom(values.secret, io.env);
    // The inspector acts (replays, sends) for whoever can reach it: only this machine, unless
    // --host says otherwise.
    const host = values.host ?? (values.ui ? '127.0.0.1' : undefined);

    const receiver = createReceiver({ secret: secrets });
    // Every verified event is handled, so the receiver answers `processed` as a real one would.
    receiver.onAny(() => {});
    receiver.onError((error) => {
      if (error.code !== 'invalid_signature') io.err(`  ${error.code}: ${error.message}`);
    });
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
};

/** The receiver, printing one line for each delivery it answers. */
function printing(receiver: Receiver, io: CliIo): Receiver {
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
      const result = await receiver.handle(observed);
      const line = `${result.status} ${result.outcome}`;
      if (result.outcome === 'invalid_signature') {
        const missing = getHeader(request.headers, 'signature') === undefined;
        io.out(`${line}: ${missing ? 'no signature header' : 'the signature matches no secret'}`);
        if (!missing) io.out(SIGNATURE_CAUSES);
      } else if (OUTCOMES[result.outcome].verified) {
        io.out(`${line} ${describe(raw)}`);
      } else {
        io.out(line);
      }
      return result;
    },
  };
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
