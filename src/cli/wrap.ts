/**
 * The layout of every help text of the CLI: word-wrapped to one width, so no line is cut by the
 * terminal and no sentence is broken by hand where a default or a list of names made it longer.
 * @module
 */

/** The width every help text is wrapped to: a terminal's default, 80 columns. */
export const HELP_WIDTH = 80;

/** A space inside a word, never broken: `[--port 3000]` in a usage line. */
const KEEP = '\u00a0';

/**
 * `text` laid out as help, in the manner of Markdown: consecutive lines that start with no space
 * are one paragraph, joined and word-wrapped to `width`; a blank line separates paragraphs; an
 * indented line stands on its own and is wrapped under its own text (under the text after a
 * `term` and two spaces or more, for a `  term     what it is` item).
 *
 * @example
 * ```ts
 * layout('One sentence\ncontinued.\n\n  list     Every job, or those in one state');
 * ```
 */
export function layout(text: string, width = HELP_WIDTH): string {
  const lines: string[] = [];
  for (const line of text.split('\n')) {
    const previous = lines.at(-1);
    if (
      previous !== undefined &&
      previous !== '' &&
      !previous.startsWith(' ') &&
      line !== '' &&
      !line.startsWith(' ')
    ) {
      lines[lines.length - 1] = `${previous} ${line}`;
    } else {
      lines.push(line);
    }
  }
  return lines.map((line) => wrapLine(line, hangOf(line), width)).join('\n');
}

/**
 * One line word-wrapped to `width`, each continuation indented by `hang` spaces; the first
 * `hang` characters of the line (an indentation, a term, `Usage: schoolhooks send `) are kept as
 * they are. Spaces inside `[...]` and `<...>`, and after a `<` redirect, never break, so a usage
 * line keeps `[--events 20]` whole and `< body.json` stays one. A word longer than a line is
 * left whole.
 */
export function wrapLine(line: string, hang: number, width = HELP_WIDTH): string {
  const kept = line.replace(/\[[^\]]*\]|<[^>\s][^>]*>|< \S+/g, (group) =>
    group.replaceAll(' ', KEEP),
  );
  const start = Math.min(hang, kept.length);
  const words = kept
    .slice(start)
    .split(' ')
    .filter((word) => word !== '');
  const out: string[] = [];
  let current = kept.slice(0, start);
  let fresh = true;
  for (const word of words) {
    if (!fresh && current.length + 1 + word.length > width) {
      out.push(current);
      current = `${' '.repeat(hang)}${word}`;
    } else {
      current = fresh ? `${current}${word}` : `${current} ${word}`;
    }
    fresh = false;
  }
  out.push(current);
  return out.map((one) => one.replaceAll(KEEP, ' ').trimEnd()).join('\n');
}

/** Where an indented line's continuations start: under the text after its term, else its own. */
function hangOf(line: string): number {
  const item = /^( +\S+(?: \S+)*? {2,})\S/.exec(line);
  if (item) return item[1]!.length;
  return line.length - line.trimStart().length;
}
