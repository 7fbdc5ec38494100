/**
 * The `select-service` flags (api §4.1 plus the service's own): one table drives parsing, the
 * `--help` text and the README's flag table. `--flag value` and `--flag=value` both work.
 * Parsing checks syntax and types and lists every problem at once; ranges owned by the router
 * config schema (`--router-tracking-hash`) and the service builder (ports, affinity TTL) are
 * checked there, with messages that name the same flags.
 */
import { DEFAULT_MAX_MESSAGE_BYTES } from './service/kv-events/ingress.js';
import type { RouterConfig } from './core/config/config.js';
import { validateZmqEndpoint } from './service/zmq-endpoint.js';

/** Pino levels accepted by `--log-level`. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Validated, frozen command-line options. */
export interface CliOptions {
  readonly help: boolean;
  readonly version: boolean;
  readonly port: number;
  readonly host: string;
  readonly threads: number | null;
  readonly indexerPeers: readonly string[];
  readonly replicaSyncPort: number | null;
  readonly replicaSyncPeers: readonly string[];
  readonly selectionCache: { readonly ttlSecs?: number; readonly maxEntries?: number; readonly maxBytes?: number };
  readonly assumeKvReuse: boolean | null;
  readonly trackingHash: string | null;
  readonly trackingKeyFile: string | null;
  readonly trackingKeyId: string | null;
  readonly sessionAffinity: { readonly ttlSecs: number; readonly mode: 'hard' | 'soft' } | null;
  readonly logLevel: LogLevel;
  readonly workersFile: string | null;
  /** KV-feed health window, seconds (null: the service's default, 30). */
  readonly kvFeedSilenceSecs: number | null;
  /** KV-event messages above this size are dropped and counted. */
  readonly kvEventsMaxMessageBytes: number;
}

/** Invalid command line; `problems` holds one line per problem, each naming its flag. */
export class CliError extends Error {
  override readonly name = 'CliError';
  constructor(readonly problems: readonly string[]) { super(`invalid command line:\n${problems.map((p) => `  - ${p}`).join('\n')}`); }
}

interface Flag { name: string; value?: string; default: string; help: string }

/** Every flag, in `--help` order. */
export const FLAGS: readonly Flag[] = [
  { name: '--port', value: 'N', default: '8092', help: 'HTTP port (0 = any free port; the bound port is logged)' },
  { name: '--host', value: 'ADDR', default: '0.0.0.0', help: 'HTTP bind address' },
  { name: '--threads', value: 'N', default: '4', help: 'accepted for compatibility; the index runs on one thread' },
  { name: '--indexer-peers', value: 'URLS', default: 'none', help: 'comma-separated HTTP base URLs to recover the index from at start-up' },
  { name: '--replica-sync-port', value: 'PORT', default: 'none', help: 'replica sync: bind a ZMQ PUB on tcp://*:PORT (1-65535)' },
  { name: '--replica-sync-peers', value: 'ENDPOINTS', default: 'none', help: 'comma-separated ZMQ endpoints of peer replicas; needs --replica-sync-port' },
  { name: '--selection-cache-ttl-secs', value: 'SECS', default: '120', help: 'pending-selection cache TTL' },
  { name: '--selection-cache-max-entries', value: 'N', default: '4096', help: 'pending-selection cache entry limit' },
  { name: '--selection-cache-max-bytes', value: 'N', default: '268435456', help: 'pending-selection cache byte budget' },
  { name: '--router-assume-kv-reuse', default: 'env', help: 'override DYN_ROUTER_ASSUME_KV_REUSE to true' },
  { name: '--no-router-assume-kv-reuse', default: 'env', help: 'override DYN_ROUTER_ASSUME_KV_REUSE to false' },
  { name: '--router-tracking-hash', value: 'NAME', default: 'env', help: 'public-xxh3-v1 or keyed-xxh3-v1' },
  { name: '--router-tracking-key-file', value: 'PATH', default: 'env', help: '32-byte key file (keyed-xxh3-v1)' },
  { name: '--router-tracking-key-id', value: 'ID', default: 'env', help: 'key epoch id (keyed-xxh3-v1)' },
  { name: '--session-affinity-ttl-secs', value: 'SECS', default: 'off', help: 'enable session affinity with this idle TTL (1-31536000)' },
  { name: '--session-affinity-mode', value: 'MODE', default: 'hard', help: 'hard or soft (needs --session-affinity-ttl-secs)' },
  { name: '--log-level', value: 'LEVEL', default: 'info', help: LOG_LEVELS.join(', ') },
  { name: '--workers-file', value: 'PATH', default: 'none', help: 'JSON array of worker records to keep the catalog in sync with' },
  { name: '--kv-feed-silence-secs', value: 'SECS', default: '30', help: 'KV-feed health window: warn about a rank not connected, disconnected or silent this long' },
  { name: '--kv-events-max-message-bytes', value: 'N', default: '67108864', help: 'KV-event messages above this size are dropped (and counted)' },
  { name: '--help', default: '', help: 'print this help and exit (also -h)' },
  { name: '--version', default: '', help: 'print the version and exit (also -V)' },
];

const ALIASES: Readonly<Record<string, string>> = { '-h': '--help', '-V': '--version' };

/** The `--help` text. */
export function usage(): string {
  const left = (f: Flag) => (f.value ? `${f.name} ${f.value}` : f.name);
  const width = Math.max(...FLAGS.map((f) => left(f).length));
  const lines = FLAGS.map((f) => `  ${left(f).padEnd(width)}  ${f.help}${f.default && f.default !== 'env' ? ` [default: ${f.default}]` : ''}`);
  return ['usage: select-service [OPTIONS]', '       select-service simulate [ARGS...]', '',
    'Router behaviour is configured with the DYN_ROUTER_* environment variables.', '', 'options:', ...lines].join('\n');
}

/** Splits argv into flag -> raw value (`true` for switches), reporting syntax problems. */
function tokenize(argv: readonly string[], problems: string[]): Map<string, string | true> {
  const known = new Map(FLAGS.map((f) => [f.name, f]));
  const seen = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = ALIASES[arg] ?? (eq > 0 ? arg.slice(0, eq) : arg);
    const flag = known.get(name);
    if (!flag) { problems.push(arg.startsWith('-') ? `${name}: unknown option` : `unexpected argument ${JSON.stringify(arg)}`); continue; }
    let value: string | true = true;
    if (flag.value) {
      if (eq > 0) value = arg.slice(eq + 1);
      else if (i + 1 < argv.length && !argv[i + 1].startsWith('--')) value = argv[++i];
      else { problems.push(`${name}: needs a value (${flag.value})`); continue; }
    } else if (eq > 0) { problems.push(`${name}: takes no value`); continue; }
    if (seen.has(name)) problems.push(`${name}: given more than once`);
    seen.set(name, value);
  }
  return seen;
}

/** Parses the command line (without the node and script paths). Throws {@link CliError}. */
export function parseCliArgs(argv: readonly string[]): CliOptions {
  const problems: string[] = [];
  const raw = tokenize(argv, problems);
  const str = (name: string): string | null => { const v = raw.get(name); return typeof v === 'string' ? v : null; };
  const num = (name: string, integer: boolean, min: number, max = Number.MAX_SAFE_INTEGER): number | null => {
    const v = str(name);
    if (v === null) return null;
    const n = v.trim() === '' ? NaN : Number(v);
    if (!Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`${name}: must be ${integer ? 'an integer' : 'a number'} between ${min} and ${max} (got ${JSON.stringify(v)})`);
      return null;
    }
    return n;
  };
  const list = (name: string): string[] => (str(name) ?? '').split(',').map((s) => s.trim()).filter((s) => s.length > 0);

  const indexerPeers = list('--indexer-peers');
  for (const u of indexerPeers) {
    if (!URL.canParse(u) || !/^https?:$/.test(new URL(u).protocol)) problems.push(`--indexer-peers: not an http(s) URL: ${JSON.stringify(u)}`);
  }
  const replicaSyncPeers = list('--replica-sync-peers');
  for (const ep of replicaSyncPeers) {
    const why = validateZmqEndpoint(ep);
    if (why) problems.push(`--replica-sync-peers: invalid ZMQ endpoint \`${ep}\`: ${why}`);
  }
  // Ports: 0 and out-of-range replica ports are the builder's to reject (same message, same flag).
  const replicaSyncPort = num('--replica-sync-port', true, Number.MIN_SAFE_INTEGER);
  if (replicaSyncPeers.length > 0 && !raw.has('--replica-sync-port')) problems.push('--replica-sync-peers: requires --replica-sync-port');
  if (raw.has('--router-assume-kv-reuse') && raw.has('--no-router-assume-kv-reuse')) {
    problems.push('--router-assume-kv-reuse: cannot be used with --no-router-assume-kv-reuse');
  }
  const ttl = num('--session-affinity-ttl-secs', false, Number.MIN_SAFE_INTEGER);
  const mode = str('--session-affinity-mode');
  if (mode !== null && mode !== 'hard' && mode !== 'soft') problems.push(`--session-affinity-mode: must be hard or soft (got ${JSON.stringify(mode)})`);
  if (mode !== null && !raw.has('--session-affinity-ttl-secs')) problems.push('--session-affinity-mode: requires --session-affinity-ttl-secs');
  const logLevel = str('--log-level') ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(logLevel)) problems.push(`--log-level: must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(logLevel)})`);
  const host = str('--host') ?? '0.0.0.0';
  if (host.trim() === '') problems.push('--host: must not be empty');
  const cache = {
    ttlSecs: num('--selection-cache-ttl-secs', false, 0) ?? undefined,
    maxEntries: num('--selection-cache-max-entries', true, 0) ?? undefined,
    maxBytes: num('--selection-cache-max-bytes', true, 0) ?? undefined,
  };
  const silence = num('--kv-feed-silence-secs', false, 0);
  if (silence === 0) problems.push('--kv-feed-silence-secs: must be greater than 0 (got "0")');
  const opts: CliOptions = {
    help: raw.has('--help'),
    version: raw.has('--version'),
    port: num('--port', true, 0, 65535) ?? 8092,
    host,
    threads: num('--threads', true, 1),
    indexerPeers,
    replicaSyncPort,
    replicaSyncPeers,
    selectionCache: Object.fromEntries(Object.entries(cache).filter(([, v]) => v !== undefined)),
    assumeKvReuse: raw.has('--router-assume-kv-reuse') ? true : raw.has('--no-router-assume-kv-reuse') ? false : null,
    trackingHash: str('--router-tracking-hash'),
    trackingKeyFile: str('--router-tracking-key-file'),
    trackingKeyId: str('--router-tracking-key-id'),
    sessionAffinity: ttl === null ? null : { ttlSecs: ttl, mode: mode === 'soft' ? 'soft' : 'hard' },
    logLevel: logLevel as LogLevel,
    workersFile: str('--workers-file'),
    kvFeedSilenceSecs: silence,
    kvEventsMaxMessageBytes: num('--kv-events-max-message-bytes', true, 1) ?? DEFAULT_MAX_MESSAGE_BYTES,
  };
  if (problems.length > 0) throw new CliError(problems);
  return Object.freeze(opts);
}

/** The router-config fields the flags override (applied through the config schema, which names the flag on error). */
export function routerOverrides(o: CliOptions): Partial<RouterConfig> {
  const out: { -readonly [K in keyof RouterConfig]?: RouterConfig[K] } = {};
  if (o.assumeKvReuse !== null) out.routerAssumeKvReuse = o.assumeKvReuse;
  if (o.trackingHash !== null) out.routerTrackingHash = o.trackingHash as RouterConfig['routerTrackingHash'];
  if (o.trackingKeyFile !== null) out.routerTrackingKeyFile = o.trackingKeyFile;
  if (o.trackingKeyId !== null) out.routerTrackingKeyId = o.trackingKeyId;
  return out;
}
