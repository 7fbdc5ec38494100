/**
 * What the real `select-service` process says when it cannot listen: one plain line on stderr
 * naming the port (and the host when it is not the default) and the flag that fixes it, exit 1,
 * and no JSON log line or stack trace. The port in use is one the test holds (listening on port 0
 * first); the privileged port is refused by the kernel (the test runs the service as `nobody`
 * when it is root itself).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:net';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn } from 'node:child_process';
import { listenProblem } from '../../../src/server.js';
import { serviceFreeEnv } from '../../support/run-process.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '../../../../..');
const CLI = join(root, 'build/dist/src/cli.js');

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs the CLI to its end (killed after 30 s); `uid` runs it as another user. */
function runCli(args: string[], uid?: number): Promise<Run> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [CLI, ...args], {
      env: serviceFreeEnv({ DYN_ROUTER_USE_KV_EVENTS: 'false' }), ...(uid === undefined ? {} : { uid, gid: uid }),
    });
    let stdout = '', stderr = '';
    const timer = setTimeout(() => c.kill('SIGKILL'), 30_000);
    c.stdout.on('data', (d: Buffer) => { stdout += d; });
    c.stderr.on('data', (d: Buffer) => { stderr += d; });
    c.on('error', reject);
    c.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
  });
}

/** No JSON log line with an error, and no stack frame, anywhere in the output. */
function noTrace(r: Run): void {
  assert.doesNotMatch(r.stdout + r.stderr, /"err"|\bat .*:\d+:\d+\)?$/m, `${r.stdout}\n${r.stderr}`);
}

test('a port in use: exit 1 with one plain line naming the port and host, and --port', async (t) => {
  const held: Server = createServer();
  await new Promise<void>((resolve) => held.listen(0, '127.0.0.1', resolve));
  t.after(() => held.close());
  const port = (held.address() as { port: number }).port;
  const r = await runCli(['--port', String(port), '--host', '127.0.0.1']);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `select-service: port ${port} on 127.0.0.1 is in use; pass --port (another port, or 0 for any free one)\n`);
  noTrace(r);
});

/** Why the kernel will let a process of this user bind a port below its unprivileged start, if it will. */
function privilegedPortSetup(): { port: number; uid?: number } | string {
  let start: number;
  try {
    start = Number(readFileSync('/proc/sys/net/ipv4/ip_unprivileged_port_start', 'utf8').trim());
  } catch {
    return 'no /proc/sys/net/ipv4/ip_unprivileged_port_start (not Linux)';
  }
  if (!(start > 0)) return 'every port is unprivileged on this machine (ip_unprivileged_port_start is 0)';
  if (process.getuid?.() === 0) return { port: start - 1, uid: 65534 }; // root: run the service as nobody
  const caps = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
  if (caps !== undefined && (BigInt(`0x${caps}`) & (1n << 10n)) !== 0n) return 'this process has CAP_NET_BIND_SERVICE';
  return { port: start - 1 };
}

test('a privileged port: exit 1 with one plain line saying it needs privileges', async (t) => {
  const setup = privilegedPortSetup();
  if (typeof setup === 'string') { t.skip(setup); return; }
  const r = await runCli(['--port', String(setup.port), '--host', '127.0.0.1'], setup.uid);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stderr, `select-service: port ${setup.port} on 127.0.0.1 needs privileges this process does not have `
    + '(ports below 1024 usually do); pass --port 1024 or above\n');
  noTrace(r);
});

test('listen failures in plain words: the default host is not named; unknown causes are left to the log', () => {
  const err = (code: string): NodeJS.ErrnoException => Object.assign(new Error(code), { code });
  assert.equal(listenProblem(err('EADDRINUSE'), '0.0.0.0', 8092), 'port 8092 is in use; pass --port (another port, or 0 for any free one)');
  assert.match(listenProblem(err('EACCES'), '0.0.0.0', 80)!, /^port 80 needs privileges/);
  assert.equal(listenProblem(err('EADDRNOTAVAIL'), '10.9.9.9', 8092),
    'cannot listen on 10.9.9.9: not an address of this machine; pass --host (0.0.0.0 listens on all of them)');
  assert.match(listenProblem(err('ENOTFOUND'), 'no-such-host.invalid', 8092)!, /^cannot listen on no-such-host\.invalid: the name does not resolve/);
  assert.equal(listenProblem(err('EMFILE'), '0.0.0.0', 8092), null);
});
