/**
 * The inspector of `schoolhooks listen --ui`: records every delivery the receiver answers, and
 * serves a page and its JSON endpoints below `/_schoolhooks/` on the receiver's own server. Its
 * parts: the delivery log (`delivery-log.ts`), the recorder that fills it
 * (`delivery-recorder.ts`), the live streams (`live-stream.ts`) and, here, the routes.
 * @module
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { FIXED_CONTRACT_EVENTS, isFixedContractEvent } from '../../platform/events/index.js';
import type { Receiver } from '../../receiving/receiver.js';
import { createDelivery } from '../../testing/create-delivery.js';
import { loadInspectorAssets, type InspectorAsset } from './assets.js';
import { createDeliveryLog, type DeliveryLog } from './delivery-log.js';
import {
  createDeliveryRecorder,
  type DeliveryRecorder,
  type RecordingMeta,
} from './delivery-recorder.js';
import { viewOf } from './delivery-view.js';
import { checkRequest, sendGuardedJson, SECURITY_HEADERS } from './guard.js';
import { readBanner } from './health-banner.js';
import { createLiveStreams } from './live-stream.js';
import type { ActionRefused, DeliveryList, InspectorInfo } from './page-api.js';
import type { Watchdog } from '../../watchdog/create-watchdog.js';
import { INSPECTOR_DEFAULTS } from '../../defaults.js';
import { tenantPath, type TenantSecretMap } from '../tenants.js';

export type { RecordingMeta };

/** Where the page and its endpoints live, on the receiver's port. */
export const INSPECTOR_PREFIX = '/_schoolhooks';

/** True for a request URL the inspector answers rather than the receiver. */
export function isInspectorPath(url: string): boolean {
  return url === INSPECTOR_PREFIX || url.startsWith(`${INSPECTOR_PREFIX}/`);
}

/** Options of {@link createInspector}. */
export interface InspectorOptions {
  /** The receiver deliveries go through; the inspector listens to its onError. */
  receiver: Receiver;
  /** The secrets, only to sign the fixtures the page sends (the first one). Never shown. */
  secrets: readonly string[];
  /**
   * Each tenant's secrets, when the receiver serves one tenant per path (`<receiverPath>/<tenant>`):
   * a fixture sent from the page names its tenant and is signed with that tenant's first secret
   * (`secrets` is then not used). The page is told the names, never a secret.
   */
  tenants?: TenantSecretMap | undefined;
  /** How many deliveries are kept in memory. Default 500. */
  keep?: number;
  /** The path fixtures sent from the page are recorded under (with tenants: below). Default `/`. */
  receiverPath?: string;
  /**
   * The watchdogs of the receiver (one, or one a tenant), for the page's health banner
   * (`GET api/health`, the worst of them). Default none: no banner.
   */
  watchdogs?: readonly Watchdog[];
}

/** What {@link createInspector} returns. */
export interface Inspector {
  /** The deliveries kept. */
  readonly log: DeliveryLog;
  /** The receiver for one request: the same answers, each recorded in the log. */
  recording(meta: RecordingMeta): Receiver;
  /** Answer a request whose URL {@link isInspectorPath} accepts. */
  serve(req: IncomingMessage, res: ServerResponse): Promise<void>;
  /** End the live streams, so the server can close. */
  close(): void;
}

/**
 * An inspector of `receiver`'s deliveries.
 *
 * @example
 * ```ts
 * const inspector = createInspector({ receiver, secrets });
 * createServer((req, res) =>
 *   isInspectorPath(req.url ?? '/')
 *     ? void inspector.serve(req, res)
 *     : void nodeListener(inspector.recording({ path: req.url ?? '/' }))(req, res),
 * );
 * ```
 */
export function createInspector({
  receiver,
  secrets,
  tenants,
  keep = INSPECTOR_DEFAULTS.keep,
  receiverPath = '/',
  watchdogs = [],
}: InspectorOptions): Inspector {
  const assets = loadInspectorAssets();
  const log = createDeliveryLog({ keep });
  const recorder = createDeliveryRecorder(receiver, log);
  const streams = createLiveStreams(log);
  const parts: RouteParts = { log, recorder, secrets, tenants, receiverPath, watchdogs };
  const routes = inspectorRoutes(parts);

  async function serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://inspector');
    if (url.pathname === INSPECTOR_PREFIX) {
      res.writeHead(308, { location: `${INSPECTOR_PREFIX}/` });
      return void res.end();
    }
    const refusal = checkRequest(req);
    if (refusal) return refuse(res, refusal.status, refusal.error);
    const path = url.pathname.slice(INSPECTOR_PREFIX.length);
    const asset = assets.get(path === '/' ? 'index.html' : path.slice(1));
    if (asset && (req.method === 'GET' || req.method === 'HEAD')) {
      return sendAsset(req, res, asset);
    }
    if (req.method === 'GET' && path === '/api/stream') return streams.open(req, res);
    const route = routes[`${req.method} ${path}`];
    if (route) return route(req, res);
    const one = /^\/api\/deliveries\/(\d+)(?:\/(replay))?$/.exec(path);
    if (one) return serveDelivery(parts, req, res, Number(one[1]), one[2]);
    refuse(res, 404, 'not_found');
  }

  return {
    log,
    recording: recorder.recording,
    serve,
    close: streams.close,
  };
}

/** An endpoint's handler. */
type Route = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

/** What the endpoints work with. */
interface RouteParts {
  log: DeliveryLog;
  recorder: DeliveryRecorder;
  secrets: readonly string[];
  tenants: TenantSecretMap | undefined;
  receiverPath: string;
  watchdogs: readonly Watchdog[];
}

/** The JSON endpoints below `/_schoolhooks/api/` with a fixed path, by `METHOD /path`. */
function inspectorRoutes(parts: RouteParts): Record<string, Route> {
  const { log, recorder, tenants, receiverPath, watchdogs } = parts;
  const { keep } = log;
  return {
    'GET /api/info': async (_req, res) =>
      sendGuardedJson(res, 200, {
        receiverPath,
        keep,
        fixtures: [...FIXED_CONTRACT_EVENTS],
        ...(tenants === undefined ? {} : { tenants: [...tenants.keys()] }),
      } satisfies InspectorInfo),
    'GET /api/health': async (_req, res) =>
      watchdogs.length === 0
        ? refuse(res, 404, 'not_watched')
        : sendGuardedJson(res, 200, await readBanner(watchdogs)),
    'GET /api/deliveries': async (_req, res) =>
      sendGuardedJson(res, 200, { keep, deliveries: log.summaries() } satisfies DeliveryList),
    'POST /api/send': async (req, res) => {
      const asked = await readJson(req);
      const event = asked?.event;
      if (typeof event !== 'string' || !isFixedContractEvent(event)) {
        return refuse(res, 400, 'unknown_fixture');
      }
      const target = fixtureTarget(parts, asked?.tenant);
      if (typeof target === 'string') return refuse(res, 400, target);
      // Signed here, with the receiver's (or the tenant's) first secret: the page never sees it.
      const signed = createDelivery(event, undefined, { secret: target.secret });
      const { result, delivery } = await recorder.answer(
        { path: target.path, source: 'fixture' },
        { method: 'POST', headers: signed.headers, body: signed.body, tenant: target.tenant },
      );
      sendGuardedJson(res, 200, { ok: true, result: result.body, delivery });
    },
  };
}

/** Where a fixture sent from the page goes, and the secret that signs it. */
interface FixtureTarget {
  path: string;
  secret: string;
  tenant: string | undefined;
}

/**
 * The target of a fixture for `tenant` (what the page asked for), or the error code of a refusal:
 * `tenant_required` when the receiver serves one tenant per path and none was named,
 * `unknown_tenant` for a tenant it does not serve.
 */
function fixtureTarget(
  { secrets, tenants, receiverPath }: RouteParts,
  tenant: unknown,
): FixtureTarget | string {
  if (tenants === undefined) {
    if (tenant !== undefined) return 'unknown_tenant';
    return { path: receiverPath, secret: secrets[0] ?? '', tenant: undefined };
  }
  if (typeof tenant !== 'string') return 'tenant_required';
  const own = tenants.get(tenant);
  if (own === undefined) return 'unknown_tenant';
  return { path: tenantPath(receiverPath, tenant), secret: own[0] ?? '', tenant };
}

/** `GET api/deliveries/:id` (the page's view of it) and `POST api/deliveries/:id/replay`. */
async function serveDelivery(
  { log, recorder }: RouteParts,
  req: IncomingMessage,
  res: ServerResponse,
  id: number,
  action: string | undefined,
): Promise<void> {
  const delivery = log.get(id);
  if (!delivery) return refuse(res, 404, 'not_kept');
  if (action === undefined && req.method === 'GET') {
    return sendGuardedJson(res, 200, viewOf(delivery, `http://${req.headers.host ?? 'localhost'}`));
  }
  if (action === 'replay' && req.method === 'POST') {
    if (delivery.body === undefined || delivery.outcome === 'too_large') {
      return refuse(res, 409, 'no_body_to_replay');
    }
    // Through the same tenant: its secrets verify the bytes again, its keys say duplicate.
    const { method, headers, body, tenant } = delivery;
    const replayed = await recorder.answer(
      { path: delivery.path, source: 'replay', replayOf: id },
      { method, headers, body, tenant },
    );
    return sendGuardedJson(res, 200, {
      ok: true,
      result: replayed.result.body,
      delivery: replayed.delivery,
    });
  }
  refuse(res, 405, 'method_not_allowed');
}

/** A refusal the page reads as `{ ok: false, error }`. */
function refuse(res: ServerResponse, status: number, error: string): void {
  sendGuardedJson(res, status, { ok: false, error } satisfies ActionRefused);
}

/** One of the page's files, as it is (HEAD: the headers alone). */
function sendAsset(req: IncomingMessage, res: ServerResponse, asset: InspectorAsset): void {
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'content-type': asset.type,
    'content-length': Buffer.byteLength(asset.content),
  });
  res.end(req.method === 'HEAD' ? undefined : asset.content);
}

/** The JSON body of a small request, or undefined. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  let text = '';
  for await (const chunk of req) {
    text += String(chunk);
    if (text.length > 4096) return undefined;
  }
  try {
    const parsed: unknown = JSON.parse(text);
    return typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
