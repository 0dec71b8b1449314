// The inspector's HTTP side without a browser: `listen --ui` run in this process, its endpoints
// called with fetch and raw node:http requests (a browser would not send a forged Host).
import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/command.js';
import { createInspector } from '../../src/cli/inspector/create-inspector.js';
import { outcomeClass } from '../../src/cli/inspector/delivery-log.js';
import { shortenSignature, SIGNATURE_CAUSE_LIST } from '../../src/cli/inspector/delivery-view.js';
import { isLocalOrIpHost } from '../../src/cli/inspector/guard.js';
import { main } from '../../src/cli/main.js';
import { createReceiver, memoryInbox, OUTCOMES } from '../../src/index.js';
import { createDelivery, fixtures } from '../../src/testing/index.js';

const SECRET = 'In5pE7cT0rS3cR9eTk2L4mN6bV8cX1zA3sD5fG7hJ9kL2qW4eR6tY8uI0oP2aS4d';
const run = promisify(execFile);

interface Listening {
  origin: string;
  output: () => string;
  stop: () => Promise<number>;
}

/** Run `schoolhooks listen …args` in this process until `stop()`. */
async function listen(args: readonly string[]): Promise<Listening> {
  let output = '';
  let stopNow = (): void => {};
  const io: CliIo = {
    out: (text) => void (output += `${text}\n`),
    err: (text) => void (output += `${text}\n`),
    readStdin: async () => new Uint8Array(),
    stdinIsTty: true,
    env: { SCHOOL_WEBHOOK_SECRET: SECRET },
    untilStopped: () => new Promise<void>((resolve) => (stopNow = resolve)),
  };
  const exited = main(['listen', '--port', '0', ...args], io);
  for (let i = 0; i < 200 && !output.includes('Listening on'); i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const origin = /Listening on (http:\/\/[^/]+)/.exec(output)?.[1];
  if (origin === undefined) throw new Error(`listen did not start:\n${output}`);
  return {
    origin,
    output: () => output,
    stop: async () => {
      stopNow();
      return exited;
    },
  };
}

const ACT = { 'content-type': 'application/json', 'x-schoolhooks-inspector': '1' };

async function deliver(origin: string, key: string): Promise<Response> {
  const { body, headers } = createDelivery('UserSignedUp', undefined, {
    secret: SECRET,
    idempotencyKey: key,
  });
  return fetch(`${origin}/hooks`, { method: 'POST', headers, body });
}

/** A raw GET with any Host header (fetch would not send a forged one). */
function getWithHost(url: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request(url, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    })
      .on('error', reject)
      .end();
  });
}

describe('listen --ui, over HTTP', () => {
  let server: Listening;
  let api = '';

  beforeAll(async () => {
    server = await listen(['--ui', '--keep', '3', '--path', '/hooks']);
    api = `${server.origin}/_schoolhooks/api`;
  });

  afterAll(async () => {
    expect(await server.stop()).toBe(0);
    expect(server.output()).not.toContain(SECRET);
  });

  it('binds to 127.0.0.1 and prints the page URL', () => {
    expect(server.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server.output()).toContain(
      `Inspector on ${server.origin}/_schoolhooks/ (keeps the last 3 deliveries)`,
    );
  });

  it('serves the page, its assets and a redirect from /_schoolhooks, with a strict CSP', async () => {
    const page = await fetch(`${server.origin}/_schoolhooks/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('<script src="inspector.js" defer></script>');
    // Nothing from a CDN or any other host.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    for (const [file, type] of [
      ['inspector.js', 'text/javascript'],
      ['inspector.css', 'text/css'],
    ]) {
      const asset = await fetch(`${server.origin}/_schoolhooks/${file}`);
      expect(asset.headers.get('content-type')).toContain(type);
    }
    const bare = await fetch(`${server.origin}/_schoolhooks`, { redirect: 'manual' });
    expect([bare.status, bare.headers.get('location')]).toEqual([308, '/_schoolhooks/']);
  });

  it('keeps only the last --keep deliveries, newest first', async () => {
    for (const key of ['keep-1', 'keep-2', 'keep-3', 'keep-4']) await deliver(server.origin, key);
    const { deliveries, keep } = (await (await fetch(`${api}/deliveries`)).json()) as {
      keep: number;
      deliveries: { idempotencyKey: string; outcomeClass: string }[];
    };
    expect(keep).toBe(3);
    expect(deliveries.map((d) => d.idempotencyKey)).toEqual(['keep-4', 'keep-3', 'keep-2']);
    expect(deliveries[0]?.outcomeClass).toBe('processed');
  });

  /** How many deliveries the inspector has seen (its numbers count up from 1). */
  async function deliveryCount(): Promise<number> {
    const { deliveries } = (await (await fetch(`${api}/deliveries`)).json()) as {
      deliveries: { id: number }[];
    };
    return deliveries[0]?.id ?? 0;
  }

  it('shows one delivery with its signature shortened, and a curl command that signs and sends it again', async () => {
    const [latest] = (
      (await (await fetch(`${api}/deliveries`)).json()) as {
        deliveries: { id: number }[];
      }
    ).deliveries;
    const view = (await (await fetch(`${api}/deliveries/${latest?.id}`)).json()) as {
      headers: Record<string, string>;
      body: string;
      curl: string;
    };
    const signature = createDelivery('UserSignedUp', undefined, { secret: SECRET }).headers
      .signature;
    expect(view.headers.signature).toMatch(/^[0-9a-f]{8}…[0-9a-f]{4}$/);
    expect(shortenSignature(signature)).toHaveLength(13);
    // A signature is a credential for its body: neither it nor the secret is in the view.
    const sent = createHmac('sha256', SECRET).update(view.body).digest('hex');
    expect(view.headers.signature).toBe(shortenSignature(sent));
    expect(JSON.stringify(view)).not.toContain(sent);
    expect(JSON.stringify(view)).not.toContain(SECRET);
    // Run by a shell in a project where schoolhooks is installed, with the secret in the
    // environment, the command signs the same bytes and sends them: a duplicate.
    const project = await mkdtemp(join(tmpdir(), 'schoolhooks-curl-'));
    const bin = join(project, 'node_modules', '.bin');
    await mkdir(bin, { recursive: true });
    const cli = fileURLToPath(new URL('../../src/cli/index.ts', import.meta.url));
    const tsx = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url));
    await writeFile(join(bin, 'schoolhooks'), `#!/bin/sh\nexec ${tsx} ${cli} "$@"\n`, {
      mode: 0o755,
    });
    const { SCHOOL_WEBHOOK_SECRET: _, ...withoutSecret } = process.env;
    try {
      const { stdout } = await run('sh', ['-c', view.curl], {
        cwd: project,
        env: { ...withoutSecret, SCHOOL_WEBHOOK_SECRET: SECRET },
      });
      expect(JSON.parse(stdout)).toEqual({
        ok: true,
        outcome: 'duplicate',
        idempotencyKey: 'keep-4',
      });
      // Without the secret it sends nothing (an unsigned request would only be refused) and
      // `sign` says what is missing.
      const before = await deliveryCount();
      const unsigned = await run('sh', ['-c', view.curl], {
        cwd: project,
        env: withoutSecret,
      }).then(
        () => undefined,
        (error: { code: number; stderr: string }) => error,
      );
      expect(unsigned?.code).toBe(2);
      expect(unsigned?.stderr).toContain('SCHOOL_WEBHOOK_SECRET');
      expect(await deliveryCount()).toBe(before);
    } finally {
      await rm(project, { recursive: true, force: true });
    }
  });

  it('refuses replay and send without the page’s header, from another origin or site', async () => {
    const replay = `${api}/deliveries/1/replay`;
    const cases: [Record<string, string>, string][] = [
      [{ 'content-type': 'application/json' }, 'inspector_header_required'],
      [{ ...ACT, origin: 'http://evil.example' }, 'cross_origin'],
      [{ ...ACT, 'sec-fetch-site': 'cross-site' }, 'cross_site'],
    ];
    for (const [headers, error] of cases) {
      for (const url of [replay, `${api}/send`]) {
        const answer = await fetch(url, {
          method: 'POST',
          headers,
          body: '{"event":"UserSignedUp"}',
        });
        expect([answer.status, ((await answer.json()) as { error: string }).error]).toEqual([
          403,
          error,
        ]);
      }
    }
  });

  it('answers only requests addressed to localhost or an IP address (no DNS rebinding)', async () => {
    const url = `${api}/deliveries`;
    expect(await getWithHost(url, 'attacker.example:80')).toBe(403);
    expect(await getWithHost(`${api}/health`, 'attacker.example:80')).toBe(403);
    expect(await getWithHost(url, 'localhost:3000')).toBe(200);
    expect(await getWithHost(url, '[::1]:3000')).toBe(200);
    expect(isLocalOrIpHost('127.0.0.1.nip.io')).toBe(false);
    expect(isLocalOrIpHost('app.localhost:8080')).toBe(true);
  });

  it('sends a fixture signed with the receiver’s secret, and refuses an unknown one', async () => {
    const sent = await fetch(`${api}/send`, {
      method: 'POST',
      headers: ACT,
      body: JSON.stringify({ event: 'CertificateIssued' }),
    });
    const answer = (await sent.json()) as {
      result: { outcome: string };
      delivery: { event: string; source: string };
    };
    expect(answer.result.outcome).toBe('processed');
    expect(answer.delivery).toMatchObject({ event: 'CertificateIssued', source: 'fixture' });
    const unknown = await fetch(`${api}/send`, {
      method: 'POST',
      headers: ACT,
      body: JSON.stringify({ event: 'UserSignedIn' }),
    });
    expect(unknown.status).toBe(400);
  });

  it('gives the likely causes of a 401, and 404 for a delivery no longer kept', async () => {
    const { body } = createDelivery('UserSignedUp', undefined, { secret: SECRET });
    await fetch(`${server.origin}/hooks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', signature: 'f'.repeat(64) },
      body,
    });
    const [latest] = (
      (await (await fetch(`${api}/deliveries`)).json()) as {
        deliveries: { id: number; status: number }[];
      }
    ).deliveries;
    expect(latest?.status).toBe(401);
    const view = (await (await fetch(`${api}/deliveries/${latest?.id}`)).json()) as {
      causes: string[];
    };
    expect(view.causes).toEqual(SIGNATURE_CAUSE_LIST);
    expect(view.causes.join(' ')).toContain('temporary key');
    expect((await fetch(`${api}/deliveries/1`)).status).toBe(404);
  });
});

describe('listen --ui --secrets-file: each delivery’s tenant, never a secret', () => {
  const TENANT_A = 'tA9-inspector-tenant-a-secret-K2mN5bV8cX1zL4kJ7hG0fD3sA6pO9iU2yT5r';
  const TENANT_B = 'tB9-inspector-tenant-b-secret-Q8wE1rT4yU7iO0pA3sD6fG9hJ2kL5zX8cV1b';
  let server: Listening;
  let api = '';
  let folder = '';
  /** Every answer body and streamed message of these tests, to search for the secrets. */
  const seen: string[] = [];

  async function getJson<T>(path: string, init?: RequestInit): Promise<T> {
    const text = await (await fetch(`${api}${path}`, init)).text();
    seen.push(text);
    return JSON.parse(text) as T;
  }

  interface Summary {
    id: number;
    tenant?: string;
    outcome: string;
    source: string;
  }

  beforeAll(async () => {
    folder = await mkdtemp(join(tmpdir(), 'schoolhooks-inspector-tenants-'));
    const file = join(folder, 'tenants.json');
    await writeFile(file, JSON.stringify({ A: TENANT_A, B: [TENANT_B] }));
    server = await listen(['--ui', '--path', '/hooks', '--secrets-file', file]);
    api = `${server.origin}/_schoolhooks/api`;
  });

  afterAll(async () => {
    expect(await server.stop()).toBe(0);
    await rm(folder, { recursive: true, force: true });
    expect(seen.length).toBeGreaterThan(5);
    for (const text of [...seen, server.output()]) {
      expect(text).not.toContain(TENANT_A);
      expect(text).not.toContain(TENANT_B);
    }
  });

  it('lists and shows the tenant of a delivery, live on the stream too', async () => {
    const stream = await fetch(`${api}/stream`);
    const reader = stream.body!.pipeThrough(new TextDecoderStream()).getReader();
    const { body, headers } = createDelivery('UserSignedUp', undefined, {
      secret: TENANT_A,
      idempotencyKey: 'tenant-ui-1',
    });
    const answer = await fetch(`${server.origin}/hooks/A`, { method: 'POST', headers, body });
    expect(answer.status).toBe(200);
    let streamed = '';
    while (!streamed.includes('event: delivery')) streamed += (await reader.read()).value ?? '';
    await reader.cancel();
    seen.push(streamed);
    const event = /event: delivery\ndata: (.*)\n/.exec(streamed)?.[1] ?? '{}';
    expect(JSON.parse(event)).toMatchObject({ tenant: 'A', idempotencyKey: 'tenant-ui-1' });

    const { deliveries } = await getJson<{ deliveries: Summary[] }>('/deliveries');
    expect(deliveries[0]).toMatchObject({ tenant: 'A', outcome: 'processed' });
    const view = await getJson<{ tenant: string; path: string; curl: string }>(
      `/deliveries/${deliveries[0]?.id}`,
    );
    expect([view.tenant, view.path]).toEqual(['A', '/hooks/A']);
    expect(view.curl).toContain(`'${server.origin}/hooks/A'`);
  });

  it('shows the worst health of the tenants: one delivery of B at risk makes the banner at_risk', async () => {
    const before = await getJson<{ status: string; atRisk: number }>('/health');
    expect(before).toMatchObject({ status: 'ok', atRisk: 0 });
    // B's payload the schema refuses: 422, a failed attempt the platform will retry.
    const data = fixtures.PaymentCompleted({
      payment: { invoice: { totalAmount: 'lots' as unknown as number } },
    });
    const { body, headers } = createDelivery('PaymentCompleted', data, { secret: TENANT_B });
    const answer = await fetch(`${server.origin}/hooks/B`, { method: 'POST', headers, body });
    expect(answer.status).toBe(422);
    const after = await getJson<Record<string, unknown>>('/health');
    // The platform disables an endpoint 14 days after its last success: A's, the one success.
    expect(after).toMatchObject({ status: 'at_risk', atRisk: 1 });
    expect(
      Date.parse(String(after['disablesAt'])) - Date.parse(String(after['lastSuccessAt'])),
    ).toBe(14 * 24 * 3_600_000);
    // Counts and times only: no key, no event, no body.
    expect(Object.keys(after).sort()).toEqual(['atRisk', 'disablesAt', 'lastSuccessAt', 'status']);
  });

  it('records an unknown tenant’s 404 with its tenant', async () => {
    const { body, headers } = createDelivery('UserSignedUp', undefined, { secret: TENANT_A });
    const answer = await fetch(`${server.origin}/hooks/nobody`, { method: 'POST', headers, body });
    expect(answer.status).toBe(404);
    const { deliveries } = await getJson<{ deliveries: Summary[] }>('/deliveries');
    expect(deliveries[0]).toMatchObject({ tenant: 'nobody', outcome: 'unknown_tenant' });
  });

  it('replays a tenant’s delivery through the same tenant: a duplicate, not a 404 or a 401', async () => {
    const { deliveries } = await getJson<{ deliveries: Summary[] }>('/deliveries');
    const original = deliveries.find((d) => d.tenant === 'A' && d.outcome === 'processed');
    const replayed = await getJson<{ result: { outcome: string }; delivery: Summary }>(
      `/deliveries/${original?.id}/replay`,
      { method: 'POST', headers: ACT },
    );
    expect(replayed.result.outcome).toBe('duplicate');
    expect(replayed.delivery).toMatchObject({ tenant: 'A', source: 'replay' });
  });

  it('offers the tenants’ names, and sends a fixture to the one named, signed with its secret', async () => {
    const info = await getJson<{ tenants: string[]; receiverPath: string }>('/info');
    expect(info).toMatchObject({ tenants: ['A', 'B'], receiverPath: '/hooks' });
    const send = (body: object) =>
      fetch(`${api}/send`, { method: 'POST', headers: ACT, body: JSON.stringify(body) });
    const sent = await send({ event: 'CourseCompleted', tenant: 'B' });
    const text = await sent.text();
    seen.push(text);
    const answer = JSON.parse(text) as { result: { outcome: string }; delivery: Summary };
    expect(answer.result.outcome).toBe('processed');
    expect(answer.delivery).toMatchObject({ tenant: 'B', source: 'fixture' });
    const view = await getJson<{ path: string }>(`/deliveries/${answer.delivery.id}`);
    expect(view.path).toBe('/hooks/B');
    await expect.poll(server.output).toMatch(/^200 processed tenant=B CourseCompleted key=/m);

    const refusals = [];
    for (const body of [{ event: 'CourseCompleted' }, { event: 'CourseCompleted', tenant: 'C' }]) {
      const refused = await send(body);
      refusals.push([refused.status, ((await refused.json()) as { error: string }).error]);
    }
    expect(refusals).toEqual([
      [400, 'tenant_required'],
      [400, 'unknown_tenant'],
    ]);
  });
});

describe('listen without --ui', () => {
  it('leaves /_schoolhooks/ to the receiver, as before', async () => {
    const server = await listen([]);
    const page = await fetch(`${server.origin}/_schoolhooks/`);
    expect(page.status).toBe(405);
    expect(server.output()).not.toContain('Inspector on');
    expect(await server.stop()).toBe(0);
  });

  it('refuses --keep 0 and a --path inside the inspector’s', async () => {
    for (const args of [
      ['--ui', '--keep', '0'],
      ['--ui', '--path', '/_schoolhooks/hooks'],
    ]) {
      let err = '';
      const code = await main(['listen', ...args], {
        out: () => {},
        err: (text) => void (err += text),
        readStdin: async () => new Uint8Array(),
        stdinIsTty: true,
        env: { SCHOOL_WEBHOOK_SECRET: SECRET },
        untilStopped: async () => {},
      });
      expect(code).toBe(2);
      expect(err).toMatch(/--keep must be|--path must not be below/);
    }
  });
});

describe('the class of an outcome', () => {
  it('gives a delivery handed to an inbox (202 queued) a class of its own', () => {
    expect(outcomeClass('queued')).toBe('queued');
    expect(outcomeClass('processed')).toBe('processed');
    expect(outcomeClass('ignored')).toBe('processed');
    expect(outcomeClass('duplicate')).toBe('duplicate');
    expect(outcomeClass('invalid_payload')).toBe('refused');
    expect(outcomeClass('inbox_unavailable')).toBe('failed');
  });

  // `listen` has no inbox: the inspector is given a receiver with one, as an app could.
  it('records a delivery a receiver with an inbox queued as queued, not processed', async () => {
    const inbox = memoryInbox();
    const receiver = createReceiver({ secret: SECRET, inbox });
    receiver.onAny(() => {});
    const inspector = createInspector({ receiver, secrets: [SECRET] });
    try {
      const { body, headers } = createDelivery('UserSignedUp', undefined, {
        secret: SECRET,
        idempotencyKey: 'queued-1',
      });
      const result = await inspector
        .recording({ path: '/hooks' })
        .handle({ method: 'POST', headers, body });
      expect([result.status, result.outcome]).toEqual([202, 'queued']);
      expect(inspector.log.summaries()).toEqual([
        expect.objectContaining({
          status: 202,
          outcome: 'queued',
          outcomeClass: 'queued',
          idempotencyKey: 'queued-1',
        }),
      ]);
    } finally {
      inspector.close();
      await inbox.close();
    }
  });

  it('offers the class in the page’s outcome filter, with a colour of its own', async () => {
    const server = await listen(['--ui']);
    try {
      const page = await (await fetch(`${server.origin}/_schoolhooks/`)).text();
      expect(page).toContain('<option value="class:queued">queued</option>');
      const css = await (await fetch(`${server.origin}/_schoolhooks/inspector.css`)).text();
      // Each class sets the two colours its rows and badges take.
      for (const name of new Set(Object.values(OUTCOMES).map((entry) => entry.class))) {
        expect(css).toMatch(new RegExp(`\\n\\.${name} \\{[^}]*--class-fg: var\\(--${name}-fg\\)`));
        expect(css).toMatch(new RegExp(`\\n\\.${name} \\{[^}]*--class-bg: var\\(--${name}-bg\\)`));
      }
      expect(css).toMatch(/\.row \{[^}]*border-left: 4px solid var\(--class-fg/);
      expect(css).toMatch(/\.badge \{[^}]*color: var\(--class-fg\)/);
    } finally {
      expect(await server.stop()).toBe(0);
    }
  });
});
