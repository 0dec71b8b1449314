/**
 * The numbers an option takes, read strictly: `Number()` alone would take `''` and `' '` as 0,
 * and `0x10` or `1e3` as numbers nobody typed.
 * @module
 */

/** `text` as a whole number written in decimal digits (a leading `-` allowed), else undefined. */
export function wholeNumberOf(text: string): number | undefined {
  if (!/^-?\d{1,15}$/.test(text)) return undefined;
  return Number(text);
}

/** `text` as a decimal number (`0.3`, `.5`, `1`), else undefined. */
export function decimalOf(text: string): number | undefined {
  if (!/^(?:\d{1,15}(?:\.\d*)?|\.\d+)$/.test(text)) return undefined;
  return Number(text);
}
