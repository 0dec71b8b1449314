import { createServer } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { nodeListener } from '../src/adapters/node.js';
import type { CliIo } from '../src/cli/command.js';
import { main } from '../src/cli/main.js';
import {
  createReceiver,
  SignatureError,
  signatureFailureOf,
  type SchoolhooksError,
  type SignatureFailureReason,
} from '../src/index.js';
import { ATTRIBUTES } from '../src/telemetry/otel/index.js';
import { listen, type AdapterServer } from './adapters/suite.js';
import { createTestDelivery, SECRET } from './helpers/deliveries.js';
import { telemetryHarness } from './otel/harness.js';

/** One delivery per reason: no header, a prefixed header, a well-formed one of another secret. */
const CASES: readonly [SignatureFailureReason, (headers: Record<string, string>) => void][] = [
  ['missing', (headers) => delete headers['signature']],
  ['malformed', (headers) => (headers['signature'] = `sha256=${headers['signature']}`)],
  ['mismatch', (headers) => (headers['signature'] = 'ab'.repeat(32))],
];

/** A header of each reason, as the classifier takes it. */
const HEADERS: Record<SignatureFailureReason, string | undefined> = {
  missing: undefined,
  malformed: 'abc',
  mismatch: 'ab'.repeat(32),
};

const MESSAGES: Record<SignatureFailureReason, string> = {
  missing: 'the signature header is missing',
  malformed: 'the signature header is not 64 hex characters',
  mismatch: 'the signature matches no secret',
};

async function send(url: string, edit: (headers: Record<string, string>) => void) {
  const { body, headers } = createTestDelivery();
  edit(headers);
  const response = await fetch(url, { method: 'POST', headers, body });
  await response.arrayBuffer();
  return response.status;
}

describe('signatureFailureOf: the one classifier', () => {
  it('tells missing, malformed and mismatch apart by the verifier’s own rule', () => {
    expect(signatureFailureOf(undefined).reason).toBe('missing');
    expect(signatureFailureOf(null).reason).toBe('missing');
    expect(signatureFailureOf('').reason).toBe('malformed');
    expect(signatureFailureOf('abc').reason).toBe('malformed');
    expect(signatureFailureOf('g'.repeat(64)).reason).toBe('malformed');
    expect(signatureFailureOf('ab'.repeat(32) + 'a').reason).toBe('malformed');
    expect(signatureFailureOf('AB'.repeat(32)).reason).toBe('mismatch');
  });

  it('names the likely causes of a mismatch, a rotation and a temporary key among them', () => {
    const causes = signatureFailureOf('ab'.repeat(32)).causes.join(' ');
    for (const cause of ['rotation', 'spaces', 'temporary key', 'body parser', 'proxy']) {
      expect(causes).toContain(cause);
    }
  });
});

describe('every consumer reads the same reason', () => {
  let server: AdapterServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('onError gets a SignatureError with the reason, its message and its causes', async () => {
    const errors: SchoolhooksError[] = [];
    const receiver = createReceiver({ secret: SECRET }).onError((e) => void errors.push(e));
    server = await listen(createServer(nodeListener(receiver)).listen(0, '127.0.0.1'), '/');
    for (const [, edit] of CASES) expect(await send(server.url, edit)).toBe(401);
    expect(errors.map((e) => [(e as SignatureError).reason, e.message])).toEqual(
      CASES.map(([reason]) => [reason, MESSAGES[reason]]),
    );
    for (const error of errors) {
      expect(error).toBeInstanceOf(SignatureError);
      expect((error as SignatureError).causes.length).toBeGreaterThan(0);
    }
  });

  it('telemetry marks the span with schoolhooks.signature.reason', async () => {
    const t = telemetryHarness();
    server = await listen(createServer(nodeListener(t.receiver())).listen(0, '127.0.0.1'), '/');
    for (const [, edit] of CASES) await send(server.url, edit);
    await send(server.url, () => {});
    const reasons = t.spans().map((span) => span.attributes[ATTRIBUTES.signatureReason]);
    expect(reasons).toEqual(['missing', 'malformed', 'mismatch', undefined]);
  });

  it('listen prints the reason and its causes, and the inspector gives the same causes', async () => {
    let output = '';
    let stop = (): void => {};
    const io: CliIo = {
      out: (text) => void (output += `${text}\n`),
      err: (text) => void (output += `${text}\n`),
      readStdin: async () => new Uint8Array(),
      stdinIsTty: true,
      env: { SCHOOL_WEBHOOK_SECRET: SECRET },
      untilStopped: () => new Promise<void>((resolve) => (stop = resolve)),
    };
    const exited = main(['listen', '--port', '0', '--path', '/hooks', '--ui'], io);
    try {
      for (let i = 0; i < 500 && !output.includes('Listening on'); i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      const origin = /Listening on (http:\/\/[^/]+)/.exec(output)![1]!;
      for (const [reason, edit] of CASES) {
        const before = output.length;
        expect(await send(`${origin}/hooks`, edit)).toBe(401);
        const printed = output.slice(before);
        const failure = signatureFailureOf(HEADERS[reason]);
        // The status line first, the reason indented under it.
        expect(printed).toContain(`401 invalid_signature\n  ${MESSAGES[reason]}\n`);
        for (const cause of failure.causes) expect(printed).toContain(`  - ${cause}`);
      }
      const api = `${origin}/_schoolhooks/api`;
      const { deliveries } = (await (await fetch(`${api}/deliveries`)).json()) as {
        deliveries: { id: number }[];
      };
      const views = await Promise.all(
        deliveries.map(
          async ({ id }) =>
            (await (await fetch(`${api}/deliveries/${id}`)).json()) as {
              causes: string[];
              errors: { reason?: string; message: string }[];
            },
        ),
      );
      // Newest first.
      expect(views.map((view) => view.errors[0]?.reason)).toEqual([
        'mismatch',
        'malformed',
        'missing',
      ]);
      for (const view of views) {
        const reason = view.errors[0]!.reason as SignatureFailureReason;
        expect(view.errors[0]!.message).toBe(MESSAGES[reason]);
        expect(view.causes).toEqual([...signatureFailureOf(HEADERS[reason]).causes]);
      }
    } finally {
      stop();
      await exited;
    }
  });
});
