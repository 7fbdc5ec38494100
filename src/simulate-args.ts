/** Flag parsing shared by `simulate` and `simulate --grid`: usage errors (exit 2) and numbers. */

/** A bad command line: the CLI prints the message and the usage, and exits 2. */
export class UsageError extends Error {}

/** The number of `--flag v` (`inf` or `unbounded` is Infinity), or undefined when absent. */
export function number(v: string | undefined, flag: string): number | undefined {
  if (v === undefined) return undefined;
  const n = v === 'inf' || v === 'unbounded' ? Infinity : Number(v);
  if (v.trim() === '' || Number.isNaN(n)) throw new UsageError(`--${flag}: not a number: ${v}`);
  return n;
}

/** The items of a comma-separated flag (blank items dropped). */
export function list(v: string): string[] {
  return v.split(',').map((s) => s.trim()).filter((s) => s !== '');
}
