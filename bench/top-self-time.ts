/**
 * The functions with the most self time in a `.cpuprofile` (from `node --cpu-prof`), as a
 * Markdown table: `tsx bench/top-self-time.ts <file.cpuprofile> [count] [--inclusive]`
 * (`--inclusive`: time with the function anywhere on the stack, callees included).
 * @module
 */

import { readFileSync } from 'node:fs';
import { relative } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

/** Self time per function (name and location), largest first, with each one's share. */
export function topSelfTime(
  file: string,
  count = 15,
  inclusive = false,
): { name: string; where: string; ms: number; share: number }[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes)
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  const totals = new Map<string, { name: string; where: string; us: number }>();
  let all = 0;
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0;
    all += us;
    // Self time: the sampled frame. Inclusive: every distinct function on its stack.
    const seen = new Set<string>();
    for (
      let node: number | undefined = id;
      node !== undefined;
      node = inclusive ? parentOf.get(node) : undefined
    ) {
      const frame = byId.get(node)?.callFrame;
      if (!frame) break;
      const name = frame.functionName || '(anonymous)';
      const url = frame.url.replace(/^file:\/\//, '');
      const where = url ? `${relative(process.cwd(), url)}:${frame.lineNumber + 1}` : '';
      const key = `${name} ${where}`;
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = totals.get(key) ?? { name, where, us: 0 };
      entry.us += us;
      totals.set(key, entry);
    }
  });
  return [...totals.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, count)
    .map(({ name, where, us }) => ({ name, where, ms: us / 1000, share: us / all }));
}

/** The table of {@link topSelfTime}, as Markdown. */
export function formatTopSelfTime(rows: ReturnType<typeof topSelfTime>): string {
  return [
    '| self % | self ms | function | where |',
    '| -: | -: | - | - |',
    ...rows.map(
      (r) => `| ${(r.share * 100).toFixed(1)} | ${r.ms.toFixed(0)} | ${r.name} | ${r.where} |`,
    ),
  ].join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const inclusive = args.includes('--inclusive');
  const [file, count] = args.filter((a) => a !== '--inclusive');
  if (!file) {
    console.error('usage: tsx bench/top-self-time.ts <file.cpuprofile> [count] [--inclusive]');
    process.exit(2);
  }
  console.log(formatTopSelfTime(topSelfTime(file, count ? Number(count) : 15, inclusive)));
}
