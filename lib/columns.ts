/**
 * How many terminal columns text takes: combining marks and zero-width joiners none; East Asian wide and
 * fullwidth characters and emoji two; everything else one.
 *
 * @example textColumns("ab漢字") // 6
 */

const WIDE =
  /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6\u{1f300}-\u{1faff}\u{20000}-\u{3fffd}]/u;

const ZERO_WIDTH = /^[\p{M}\u200b-\u200d]$/u;

/** Terminal columns of one character (one code point): 0, 1 or 2. */
export function charColumns(char: string): number {
  if (ZERO_WIDTH.test(char)) return 0;
  return WIDE.test(char) ? 2 : 1;
}

/** Terminal columns of one line of text. */
export function textColumns(text: string): number {
  let n = 0;
  for (const char of text) n += charColumns(char);
  return n;
}
