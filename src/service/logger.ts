/** The logger the service's parts write to: a subset of pino's API (Fastify's logger fits). */
export interface Logger {
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
  debug(obj: unknown, msg?: string): void;
}

/** A logger that drops everything (the builder's default). */
export const silentLogger: Logger = { info() {}, warn() {}, error() {}, debug() {} };
