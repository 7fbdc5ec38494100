/**
 * Usage text at a readable width: `--help`, `--help-env` and `select-service simulate --help`
 * wrap every line at {@link USAGE_WIDTH} columns, continuation lines indented under the text they
 * continue (a test holds every line of them to the width).
 */

/** Columns of usage text. */
export const USAGE_WIDTH = 100;

/**
 * `words` word-wrapped after `head` (the first line's leading columns, e.g. a flag and its
 * padding): lines of at most `width` columns, each continuation indented by `indent` spaces (by
 * default, to the column where the text starts). A word is never split, so one longer than a
 * line stands alone on its line.
 */
export function wrapWords(head: string, words: readonly string[], width = USAGE_WIDTH, indent = head.length): string[] {
  const lines: string[] = [];
  let line = head;
  let empty = true;
  for (const w of words) {
    if (w === '') continue;
    if (!empty && line.length + 1 + w.length > width) {
      lines.push(line);
      line = ' '.repeat(indent);
      empty = true;
    }
    line += empty ? w : ` ${w}`;
    empty = false;
  }
  lines.push(line);
  return lines;
}

/** {@link wrapWords} over the words of `text` (split at spaces), as one string. */
export function wrapText(text: string, head = '', indent = head.length, width = USAGE_WIDTH): string {
  return wrapWords(head, text.split(' '), width, indent).join('\n');
}
