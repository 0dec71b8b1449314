/**
 * A reader of the YAML that docs/watchdog/prometheus-rules.yml is written in, with no
 * dependency: block mappings and sequences by indentation, plain, single- and double-quoted
 * scalars, whole-line comments. Anything else (tabs, flow collections, block scalars, anchors,
 * a key twice) throws, naming the line, so a rules file it reads is one any YAML reader reads
 * the same way.
 */

/** A YAML value of the subset. */
export type YamlValue = string | YamlValue[] | { [key: string]: YamlValue };

interface Line {
  readonly number: number;
  readonly indent: number;
  readonly text: string;
}

/** The document in `source`, or an error naming the first line it cannot read. */
export function parseYamlSubset(source: string): YamlValue {
  const lines: Line[] = [];
  source.split('\n').forEach((raw, index) => {
    if (raw.includes('\t')) throw new Error(`line ${index + 1}: a tab`);
    const text = raw.trimEnd();
    if (text.trim() === '' || text.trim().startsWith('#')) return;
    lines.push({
      number: index + 1,
      indent: text.length - text.trimStart().length,
      text: text.trim(),
    });
  });
  let at = 0;

  function block(indent: number): YamlValue {
    const first = lines[at];
    if (first === undefined || first.indent !== indent)
      throw new Error(`line ${first?.number}: indentation`);
    return first.text.startsWith('- ') ? sequence(indent) : mapping(indent);
  }

  function sequence(indent: number): YamlValue[] {
    const items: YamlValue[] = [];
    while (lines[at]?.indent === indent && lines[at]!.text.startsWith('- ')) {
      const line = lines[at]!;
      // `- key: value` opens a mapping whose keys sit two columns in.
      lines[at] = { number: line.number, indent: indent + 2, text: line.text.slice(2).trimStart() };
      items.push(
        lines[at]!.text.includes(': ') || lines[at]!.text.endsWith(':')
          ? mapping(indent + 2)
          : scalar(lines[at++]!),
      );
    }
    return items;
  }

  function mapping(indent: number): { [key: string]: YamlValue } {
    const map: { [key: string]: YamlValue } = {};
    while (lines[at]?.indent === indent && !lines[at]!.text.startsWith('- ')) {
      const line = lines[at]!;
      const match = /^([A-Za-z_][\w-]*):(?: (.*))?$/.exec(line.text);
      if (match === null) throw new Error(`line ${line.number}: not a key: value`);
      const [, key, rest] = match;
      if (key! in map) throw new Error(`line ${line.number}: ${key} twice`);
      at++;
      if (rest === undefined || rest === '') {
        const next = lines[at];
        if (
          next === undefined ||
          next.indent < indent ||
          (next.indent === indent && !next.text.startsWith('- '))
        ) {
          throw new Error(`line ${line.number}: ${key} has no value`);
        }
        map[key!] = block(next.indent);
      } else {
        map[key!] = scalar({ ...line, text: rest });
      }
    }
    if (lines[at] !== undefined && lines[at]!.indent > indent) {
      throw new Error(`line ${lines[at]!.number}: indentation`);
    }
    return map;
  }

  function scalar({ number, text }: Line): string {
    if (text.startsWith('"')) {
      if (!/^"(?:[^"\\]|\\.)*"$/.test(text)) throw new Error(`line ${number}: a broken "string"`);
      return JSON.parse(text) as string;
    }
    if (text.startsWith("'")) {
      if (!/^'(?:[^']|'')*'$/.test(text)) throw new Error(`line ${number}: a broken 'string'`);
      return text.slice(1, -1).replaceAll("''", "'");
    }
    if (/^[[{|>&*!%@`]/.test(text) || / #/.test(text) || /: /.test(text)) {
      throw new Error(`line ${number}: not a plain scalar of the subset: ${text}`);
    }
    return text;
  }

  const document = block(lines[0]?.indent ?? 0);
  if (at !== lines.length) throw new Error(`line ${lines[at]!.number}: indentation`);
  return document;
}
