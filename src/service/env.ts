/**
 * The one place that reads `process.env` (the lint enforces it): a frozen copy of the
 * environment, so configuration is parsed once from a plain record.
 */
export function readEnv(): Readonly<Record<string, string | undefined>> {
  return Object.freeze({ ...process.env });
}
