/**
 * A network namespace joined to this one by a veth pair, so a test can put a real process on the
 * other side and cut it off (`cut`: the link down, packets vanish as on a broken network) and
 * heal it. Both ends are addresses of this machine (a /30 of 10.231.0.0/16 no interface here
 * uses). Needs root and iproute2's `ip`: {@link netnsUnavailable} says why not, for a skip.
 *
 * Names carry this process's pid (`ss29-<pid>-<n>`, veths `ssv<pid><n>a|b`), so parallel runs
 * never clash; `remove` deletes the pair and the namespace, and {@link removeStaleNamespaces}
 * deletes those left by a test process that died before its cleanup.
 */
import { spawnSync } from 'node:child_process';

export interface Netns {
  readonly name: string;
  /** This namespace's end (the root namespace). */
  readonly hostAddress: string;
  /** The address inside the namespace. */
  readonly innerAddress: string;
  /** Prefix for a command run inside the namespace. */
  readonly exec: readonly string[];
  cut(): void;
  heal(): void;
  remove(): void;
}

function ip(args: string[]): { ok: boolean; out: string } {
  const r = spawnSync('ip', args, { encoding: 'utf8' });
  return { ok: r.status === 0, out: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

function must(args: string[]): string {
  const r = ip(args);
  if (!r.ok) throw new Error(`ip ${args.join(' ')}: ${r.out.trim()}`);
  return r.out;
}

/** Why namespaces cannot be made here, or null when they can. */
export function netnsUnavailable(): string | null {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'network namespaces need root';
  const v = spawnSync('ip', ['-V'], { encoding: 'utf8' });
  if (v.error || v.status !== 0) return 'iproute2 `ip` is not installed';
  return null;
}

const alive = (pid: number): boolean => { try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; } };

/** Deletes namespaces (and their veths) of test processes that are gone. */
export function removeStaleNamespaces(): void {
  for (const line of ip(['netns', 'list']).out.split('\n')) {
    const m = /^ss29-(\d+)-(\d+)/.exec(line.trim());
    if (!m || alive(Number(m[1]))) continue;
    ip(['link', 'del', `ssv${m[1]}${m[2]}a`]);
    ip(['netns', 'del', `ss29-${m[1]}-${m[2]}`]);
  }
}

let made = 0;

/** Makes a namespace with a veth pair to this one, addresses up. Throws (after removing what it made) on failure. */
export function makeNetns(): Netns {
  removeStaleNamespaces();
  const n = made++;
  const name = `ss29-${process.pid}-${n}`, outer = `ssv${process.pid}${n}a`, inner = `ssv${process.pid}${n}b`;
  const used = ip(['-o', '-4', 'addr', 'show']).out;
  let net = '';
  for (let tries = 0; tries < 64; tries++) {
    const a = Math.floor(Math.random() * 256), b = Math.floor(Math.random() * 64) * 4;
    if (!used.includes(`10.231.${a}.`)) { net = `10.231.${a}.${b}`; break; }
  }
  if (net === '') throw new Error('no free /30 in 10.231.0.0/16');
  const [p, q, r, s] = net.split('.').map(Number);
  const hostAddress = `${p}.${q}.${r}.${s + 1}`, innerAddress = `${p}.${q}.${r}.${s + 2}`;
  const remove = (): void => { ip(['link', 'del', outer]); ip(['netns', 'del', name]); };
  try {
    must(['netns', 'add', name]);
    must(['link', 'add', outer, 'type', 'veth', 'peer', 'name', inner]);
    must(['link', 'set', inner, 'netns', name]);
    must(['addr', 'add', `${hostAddress}/30`, 'dev', outer]);
    must(['link', 'set', outer, 'up']);
    must(['netns', 'exec', name, 'ip', 'addr', 'add', `${innerAddress}/30`, 'dev', inner]);
    must(['netns', 'exec', name, 'ip', 'link', 'set', inner, 'up']);
    must(['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
  } catch (err) {
    remove();
    throw err;
  }
  return {
    name, hostAddress, innerAddress, exec: ['ip', 'netns', 'exec', name],
    cut: () => { must(['link', 'set', outer, 'down']); },
    heal: () => { must(['link', 'set', outer, 'up']); },
    remove,
  };
}
