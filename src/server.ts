/**
 * `select-service` serving: the service (from the router configuration and the flags), the HTTP
 * app, optional workers-file discovery, listen, and graceful shutdown on SIGINT/SIGTERM
 * (report not ready and fail queued selections, stop accepting, finish in-flight requests,
 * close listeners and sockets; exit 0 within 5 s even if something hangs).
 */
import type { AddressInfo } from 'node:net';
import type { RouterConfig } from './core/config/config.js';
import { envDeprecations } from './core/config/config-env.js';
import { createServer, selectionApi } from './http/app.js';
import { WorkersFileDiscovery } from './service/discovery.js';
import { AuthTokens } from './service/auth.js';
import { SelectionServiceBuilder } from './service/service.js';
import { openFileLimit, rankCapacity } from './service/fd-limit.js';
import { FLAGS, StartError, unknownEnvWarnings, type CliOptions } from './cli-args.js';

/** Time allowed for a graceful stop before the process exits anyway (under the 5 s rule). */
const SHUTDOWN_GRACE_MS = 4000;

const DEFAULT_HOST = FLAGS.find((f) => f.name === '--host')!.default;

/**
 * The one line that says why listening failed and which flag fixes it, for the failures a user
 * meets on a first start (a port in use, a privileged port, an address or name of no interface
 * here); null for anything else (logged with its details).
 */
export function listenProblem(err: NodeJS.ErrnoException, host: string, port: number): string | null {
  const where = host === DEFAULT_HOST ? `port ${port}` : `port ${port} on ${host}`;
  switch (err.code) {
    case 'EADDRINUSE': return `${where} is in use; pass --port (another port, or 0 for any free one)`;
    case 'EACCES': return `${where} needs privileges this process does not have (ports below 1024 usually do); pass --port 1024 or above`;
    case 'EADDRNOTAVAIL': return `cannot listen on ${host}: not an address of this machine; pass --host (${DEFAULT_HOST} listens on all of them)`;
    case 'ENOTFOUND': case 'EAI_AGAIN': return `cannot listen on ${host}: the name does not resolve; pass --host with an address of this machine`;
    default: return null;
  }
}

/**
 * Runs the service until SIGINT/SIGTERM; resolves with the exit code. Options the service
 * builder rejects throw ConfigError (nothing is bound by then); a failed listen throws StartError
 * with one plain line when {@link listenProblem} knows the cause, else resolves 1.
 */
export async function runServer(opts: CliOptions, config: RouterConfig, env: Readonly<Record<string, string | undefined>>): Promise<number> {
  const app = createServer({
    logger: { level: opts.logLevel }, requestTimeoutMs: opts.requestTimeoutMs, connectionTimeoutMs: opts.connectionTimeoutMs,
  });
  const log = app.log;
  for (const note of envDeprecations(env)) log.warn(note);
  for (const { name, closest } of unknownEnvWarnings(env)) {
    log.warn({ variable: name, closest }, `unknown environment variable ${name} is ignored (did you mean ${closest}?)`);
  }
  if (opts.threads !== null) log.info({ threads: opts.threads }, '--threads has no effect: the index is one WebAssembly instance');
  const auth = opts.authTokenFile !== null ? await AuthTokens.open(opts.authTokenFile, log) : null;
  const fds = openFileLimit();
  const maxRanks = rankCapacity(fds);
  const builder = new SelectionServiceBuilder(config).logger(log).selectionCache(opts.selectionCache).indexerPeers(opts.indexerPeers)
    .kvEvents({ maxMessageBytes: opts.kvEventsMaxMessageBytes, maxRanks, yieldBudgetMs: opts.kvEventsTurnMs ?? undefined })
    .limits(opts.limits).allowedEndpoints(opts.allowedEndpoints);
  if (auth) builder.peerToken(() => auth.outbound);
  if (opts.replicaSyncPort !== null) builder.replicaSync(opts.replicaSyncPort, opts.replicaSyncPeers, opts.replicaSyncLimits);
  if (opts.sessionAffinity) builder.sessionAffinity(opts.sessionAffinity);
  if (opts.kvFeedSilenceSecs !== null) builder.kvFeedSilence(opts.kvFeedSilenceSecs);
  const service = await builder.build().catch((err: unknown) => { auth?.close(); throw err; });
  if (config.useKvEvents) {
    log.info({ openFilesSoft: fds?.soft ?? null, openFilesHard: fds?.hard ?? null, maxKvEventRanks: maxRanks },
      'KV events: one connection per worker rank; the open-file limit bounds the ranks this process can follow');
  }
  await app.register(selectionApi, { service, auth: auth ?? undefined });
  if (auth) {
    log.info({ path: auth.path, tokens: auth.size }, 'authentication on: every route but /health, /ready and /metrics needs a bearer token');
    process.on('SIGHUP', () => { void auth.reload(); });
  }
  const discovery = opts.workersFile ? new WorkersFileDiscovery({ path: opts.workersFile, target: service, logger: log }) : null;
  await discovery?.start();
  try {
    await app.listen({ port: opts.port, host: opts.host });
  } catch (err) {
    discovery?.close();
    auth?.close();
    await service.shutdown();
    const plain = listenProblem(err as NodeJS.ErrnoException, opts.host, opts.port);
    if (plain !== null) throw new StartError(plain);
    log.error({ err, host: opts.host, port: opts.port }, 'cannot listen');
    return 1;
  }
  const { address, port } = app.server.address() as AddressInfo;
  log.info({ host: address, port, replicaSyncPort: service.replicaSyncPort }, 'select-service listening');

  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      log.info({ signal }, 'shutting down');
      const hard = setTimeout(() => { log.warn({ graceMs: SHUTDOWN_GRACE_MS }, 'graceful shutdown timed out; exiting'); resolve(0); }, SHUTDOWN_GRACE_MS);
      discovery?.close();
      auth?.close();
      // First: /ready turns 503 and queued selections fail, so in-flight requests end promptly.
      const closing = service.shutdown();
      // close() reaps the keep-alive sockets idle at that moment; a request still in flight then
      // leaves its socket idle afterwards, and close() would wait for the client to drop it.
      const reap = setInterval(() => app.server.closeIdleConnections(), 50);
      void (async () => {
        try {
          await app.close(); // stops accepting; waits for in-flight requests
          await closing; // replica-sync and KV-event sockets
          log.info('stopped');
        } catch (err) {
          log.error({ err }, 'error while shutting down');
        }
        clearInterval(reap);
        clearTimeout(hard);
        resolve(0);
      })();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}
