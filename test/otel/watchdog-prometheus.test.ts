/**
 * The alert rules and the dashboard of docs/watchdog/ against what the real
 * @opentelemetry/exporter-prometheus emits over HTTP for otelWatchdog's gauges: every metric,
 * label and status they name is one the scrape holds (as Prometheus writes them), the rules
 * file is YAML each of whose rules has alert, expr, for, labels and annotations, and the
 * dashboard shows every gauge.
 */

import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PrometheusExporter } from '@opentelemetry/exporter-prometheus';
import { MeterProvider } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createReceiver, memoryStore } from '../../src/index.js';
import { otelWatchdog } from '../../src/telemetry/otel/index.js';
import { createWatchdog } from '../../src/watchdog/index.js';
import { createTestDelivery, SECRET } from '../helpers/deliveries.js';
import { parseYamlSubset, type YamlValue } from '../helpers/yaml-subset.js';

const docs = new URL('../../docs/watchdog/', import.meta.url);
const rulesText = readFileSync(new URL('prometheus-rules.yml', docs), 'utf8');
const dashboard = JSON.parse(
  readFileSync(new URL('grafana-dashboard.json', docs), 'utf8'),
) as unknown;

let server: Server;
let meterProvider: MeterProvider;
/** The text of one scrape of /metrics. */
let scraped = '';

beforeAll(async () => {
  const exporter = new PrometheusExporter({ preventServerStart: true });
  meterProvider = new MeterProvider({ readers: [exporter] });
  server = createServer((request, response) =>
    exporter.getMetricsRequestHandler(request, response),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // A school whose last delivery failed: every gauge and every status has a point.
  const receiver = createReceiver({ secret: SECRET, store: memoryStore(), logger: false });
  let failing = false;
  receiver.on('UserSignedIn', () => {
    if (failing) throw new Error('crm down');
  });
  receiver.onError(() => {});
  await receiver.handle({ method: 'POST', ...createTestDelivery() });
  failing = true;
  await receiver.handle({ method: 'POST', ...createTestDelivery() });
  const watchdog = otelWatchdog(createWatchdog({ receiver }), {
    meterProvider,
    tenant: 'school-a',
  });
  expect((await watchdog.check()).status).toBe('at_risk');
  const { port } = server.address() as AddressInfo;
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(response.status).toBe(200);
  scraped = await response.text();
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  await meterProvider?.shutdown();
});

/** The metric names of the scrape (`# TYPE <name> <type>`), and the labels of its samples. */
function emitted(): { metrics: Set<string>; labels: Set<string>; pairs: Set<string> } {
  const metrics = new Set([...scraped.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1]!));
  const labels = new Set<string>();
  const pairs = new Set<string>();
  for (const [, body] of scraped.matchAll(/^[a-zA-Z_:][\w:]*\{([^}]*)\}/gm)) {
    for (const [, name, value] of body!.matchAll(/([a-zA-Z_]\w*)="([^"]*)"/g)) {
      labels.add(name!);
      pairs.add(`${name}="${value}"`);
    }
  }
  return { metrics, labels, pairs };
}

/** Every PromQL expression of the dashboard: its targets' and its variables' queries. */
function dashboardExpressions(value: unknown): string[] {
  if (Array.isArray(value)) return value.flatMap(dashboardExpressions);
  if (typeof value !== 'object' || value === null) return [];
  return Object.entries(value).flatMap(([key, inner]) =>
    (key === 'expr' || key === 'definition') && typeof inner === 'string'
      ? [inner]
      : dashboardExpressions(inner),
  );
}

/** The rules of the rules file, each as its fields. */
function rules(): Record<string, YamlValue>[] {
  const document = parseYamlSubset(rulesText) as {
    groups: { name: string; rules: Record<string, YamlValue>[] }[];
  };
  return document.groups.flatMap((group) => group.rules);
}

/** What an expression names: `schoolhooks_*` metrics and labels, and `label="value"` matchers. */
function namesIn(expression: string, labels: Set<string>) {
  const tokens = [...expression.matchAll(/\bschoolhooks_\w+/g)].map((match) => match[0]);
  return {
    metrics: tokens.filter((token) => !labels.has(token)),
    matchers: [...expression.matchAll(/\b(schoolhooks_\w+)=~?"([^"$.*]+)"/g)].map(
      ([, name, value]) => `${name}="${value}"`,
    ),
  };
}

describe('the watchdog gauges as Prometheus scrapes them', () => {
  it('are named as the docs name them, without unit suffixes, with the tenant and status labels', () => {
    const { metrics, labels, pairs } = emitted();
    for (const name of ['last_success_age', 'at_risk', 'disables_in', 'status']) {
      expect(metrics).toContain(`schoolhooks_watchdog_${name}`);
    }
    expect(labels).toContain('schoolhooks_tenant');
    for (const status of ['ok', 'at_risk', 'failing', 'silent']) {
      expect(pairs).toContain(`schoolhooks_health_status="${status}"`);
    }
  });
});

describe('docs/watchdog/prometheus-rules.yml', () => {
  it('is YAML whose every rule has alert, expr, for, labels (with a severity) and annotations', () => {
    const all = rules();
    expect(all.length).toBeGreaterThanOrEqual(5);
    for (const rule of all) {
      expect(Object.keys(rule).sort()).toEqual(['alert', 'annotations', 'expr', 'for', 'labels']);
      expect(rule['alert']).toMatch(/^[A-Z][A-Za-z]+$/);
      expect(rule['for']).toMatch(/^\d+[smhdwy]$/);
      expect(rule['labels']).toMatchObject({
        severity: expect.stringMatching(/^(warning|critical)$/),
      });
      expect(rule['annotations']).toMatchObject({
        summary: expect.any(String),
        description: expect.any(String),
      });
    }
    expect(new Set(all.map((rule) => rule['alert'])).size).toBe(all.length);
  });

  it('names only metrics, labels and statuses the exporter emits', () => {
    const { metrics, labels, pairs } = emitted();
    const used = rules().map((rule) => namesIn(rule['expr'] as string, labels));
    expect(used.flatMap((names) => names.metrics).length).toBeGreaterThanOrEqual(5);
    for (const names of used) {
      for (const metric of names.metrics) expect(metrics).toContain(metric);
      for (const matcher of names.matchers) expect(pairs).toContain(matcher);
    }
  });
});

describe('docs/watchdog/grafana-dashboard.json', () => {
  it('names only metrics, labels and statuses the exporter emits, and shows every gauge', () => {
    const { metrics, labels, pairs } = emitted();
    const expressions = dashboardExpressions(dashboard);
    expect(expressions.length).toBeGreaterThanOrEqual(5);
    const used = expressions.map((expression) => namesIn(expression, labels));
    for (const names of used) {
      for (const metric of names.metrics) expect(metrics).toContain(metric);
      for (const matcher of names.matchers) expect(pairs).toContain(matcher);
    }
    const shown = new Set(used.flatMap((names) => names.metrics));
    for (const metric of metrics) {
      if (metric.startsWith('schoolhooks_watchdog_')) expect(shown).toContain(metric);
    }
    for (const label of [...expressions.join(' ').matchAll(/\{\{(\w+)\}\}|by \((\w+)\)/g)]) {
      expect(labels).toContain(label[1] ?? label[2]);
    }
  });
});
