#!/usr/bin/env node
/**
 * `select-service`: the command users run. `select-service [OPTIONS]` serves the selection API
 * (cli-args.ts lists the flags; the DYN_ROUTER_* environment configures routing);
 * `select-service simulate ...` runs the routing-policy simulator. Exit codes: 0 success (and
 * after SIGINT/SIGTERM), 1 runtime failure (e.g. the port is taken), 2 invalid flags or
 * configuration; every failure the user can fix is one plain line on stderr.
 */
import { statSync } from 'node:fs';
import { ConfigError, parseRouterConfig } from './core/config/config.js';
import { CliError, envHelp, flagEnv, FLAGS, parseCliArgs, routerOverrides, StartError, usage, type CliOptions } from './cli-args.js';
import { readEnv } from './service/env.js';
import { VERSION } from './version.js';

const fail = (message: string, code: number): number => {
  process.stderr.write(`select-service: ${message}\n`);
  return code;
};

/** The simulator, loaded only when asked for (the service's start-up does not pay for it). */
async function simulate(argv: string[]): Promise<number> {
  const { main: simulateMain } = await import('./simulate-cli.js');
  return simulateMain(argv);
}

/**
 * A `--workers-file` must exist at start: a typo would otherwise serve an empty catalog (once
 * running, the file may vanish for a while: discovery logs it and retries). Named as given.
 */
function checkWorkersFile(opts: CliOptions, argv: readonly string[]): void {
  if (opts.workersFile === null) return;
  const flag = '--workers-file';
  const name = argv.some((a) => a === flag || a.startsWith(`${flag}=`)) ? flag : flagEnv(FLAGS.find((f) => f.name === flag)!)!;
  let why: string | null = null;
  try {
    if (!statSync(opts.workersFile).isFile()) why = 'not a file';
  } catch (err) {
    why = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
  }
  if (why !== null) throw new CliError([`${name}: ${why}: ${opts.workersFile}`]);
}

/** Runs the command; resolves with the exit code. */
async function main(argv: string[]): Promise<number> {
  if (argv[0] === 'simulate') return simulate(argv.slice(1));
  try {
    const env = readEnv();
    const opts = parseCliArgs(argv, env);
    if (opts.help) { process.stdout.write(`${usage()}\n`); return 0; }
    if (opts.helpEnv) { process.stdout.write(`${envHelp()}\n`); return 0; }
    if (opts.version) { process.stdout.write(`${VERSION}\n`); return 0; }
    checkWorkersFile(opts, argv);
    const config = parseRouterConfig(env, routerOverrides(opts));
    // Loaded only to serve: help, version and configuration errors answer without Fastify,
    // ZeroMQ and the wasm core (a bad flag exits in ~0.25 s instead of ~0.5 s).
    const { runServer } = await import('./server.js');
    return await runServer(opts, config, env);
  } catch (err) {
    if (err instanceof CliError) return fail(`${err.message}\nRun 'select-service --help' for the options.`, 2);
    if (err instanceof ConfigError) return fail(err.message, 2);
    if (err instanceof StartError) return fail(err.message, 1);
    return fail(err instanceof Error ? err.stack ?? err.message : String(err), 1);
  }
}

const code = await main(process.argv.slice(2));
// Let stdout/stderr drain, but never linger: a stuck handle must not keep the process alive.
process.exitCode = code;
setTimeout(() => process.exit(code), 100).unref();
