/**
 * Real `select-service` processes for multi-replica tests: spawns the built CLI
 * (build/dist/src/cli.js) on 127.0.0.1 with `--port 0`, reads the bound address from Fastify's
 * "Server listening at" log line, and offers a small JSON client (u64-exact parse) whose every
 * response is checked against the OpenAPI document (openapi-check.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseJson, stringifyJson } from '../../src/core/wire/json.js';
import { checkResponse } from './openapi-check.js';

// compiled to build/dist/test/support/: four levels up is the project root
const root = join(dirname(fileURLToPath(import.meta.url)), '../../../..');
export const CLI = join(root, 'build/dist/src/cli.js');

export interface ServiceProcess {
  readonly child: ChildProcess;
  readonly url: string;
  /** Everything the process wrote (stdout + stderr). */
  output(): string;
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** SIGTERM, resolves with the exit code. */
  stop(): Promise<number | null>;
  kill(): Promise<void>;
}

/**
 * Starts a service; rejects (with its output) when it exits or does not listen within `timeoutMs`.
 * `command` runs something other than the built CLI (e.g. an installed package's bin, or the CLI
 * inside a network namespace); `host` is the address it listens on.
 */
export function startService(args: string[], env: Record<string, string> = {}, timeoutMs = 60_000,
  command: readonly string[] = [process.execPath, CLI], host = '127.0.0.1'): Promise<ServiceProcess> {
  const child = spawn(command[0], [...command.slice(1), '--host', host, '--port', '0', ...args], {
    env: { ...process.env, DYN_ROUTER_USE_KV_EVENTS: 'false', ...env }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`service did not listen in time:\n${out}`)); }, timeoutMs);
    const onData = (d: Buffer): void => {
      out += d.toString();
      const m = new RegExp(`Server listening at (http://${host.replace(/\./g, '\\.')}:\\d+)`).exec(out);
      if (!m) return;
      clearTimeout(timer);
      const url = m[1];
      resolve({
        child, url, output: () => out,
        async request(method, path, body) {
          const res = await fetch(url + path, {
            method, headers: body === undefined ? {} : { 'content-type': 'application/json' },
            body: body === undefined ? undefined : stringifyJson(body),
          });
          const text = await res.text();
          checkResponse({ method, url: path, status: res.status, contentType: res.headers.get('content-type'), text, allow: res.headers.get('allow') });
          return { status: res.status, body: text ? parseJson(text) : undefined };
        },
        async stop() { child.kill('SIGTERM'); return exited; },
        async kill() { child.kill('SIGKILL'); await exited; },
      });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => { clearTimeout(timer); reject(new Error(`service exited (${code}) before listening:\n${out}`)); });
  });
}
