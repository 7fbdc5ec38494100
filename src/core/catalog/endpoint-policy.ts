/**
 * The outbound-connection allowlist (`--allowed-endpoints`): which ZMQ endpoints a client may make
 * the service connect to (a worker's `kv_events_endpoint(s)` and `replay_endpoint`, a replica-sync
 * peer). Without a list every endpoint is allowed (Dynamo's behaviour). Entries:
 *
 * - `ipc://PREFIX` or `inproc://PREFIX`: endpoints of that scheme whose address starts with PREFIX
 *   after `.` and `..` path segments are resolved (end a directory prefix with `/`);
 * - `A.B.C.D/N` or `IPV6/N`: tcp endpoints whose host is an IP literal inside the CIDR block (host
 *   names are not resolved: a name never matches a CIDR entry);
 * - anything else is a host pattern for tcp endpoints, matched case-insensitively against the whole
 *   host, `*` standing for any run of characters (`*.gpu.internal`, `worker-*`, `10.0.0.7`).
 *
 * Ports are not restricted. Isomorphic: no `node:` imports (IP literals are parsed here).
 */
import type { EndpointPolicy } from '../options.js';

type Rule =
  | { kind: 'prefix'; scheme: string; prefix: string }
  | { kind: 'cidr'; bits: number; net: bigint; width: 32 | 128 }
  | { kind: 'host'; re: RegExp };

/** An IPv4 literal as a 32-bit value, or null. */
function ipv4(s: string): bigint | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(s);
  if (!m) return null;
  let v = 0n;
  for (let i = 1; i <= 4; i++) {
    const o = Number(m[i]);
    if (o > 255 || (m[i].length > 1 && m[i][0] === '0')) return null;
    v = (v << 8n) | BigInt(o);
  }
  return v;
}

/** An IPv6 literal (`::` shorthand and a trailing dotted IPv4 allowed; no zone) as a 128-bit value, or null. */
function ipv6(s: string): bigint | null {
  let text = s;
  const colon = s.lastIndexOf(':');
  if (colon >= 0 && s.indexOf('.', colon) > colon) {
    const v4 = ipv4(s.slice(colon + 1));
    if (v4 === null) return null;
    text = `${s.slice(0, colon + 1)}${(v4 >> 16n).toString(16)}:${(v4 & 0xffffn).toString(16)}`;
  }
  if (!/^[0-9a-fA-F:]+$/.test(text)) return null;
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const groups = (part: string): bigint[] | null => {
    if (part === '') return [];
    const out: bigint[] = [];
    for (const g of part.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
      out.push(BigInt(`0x${g}`));
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (head === null || tail === null) return null;
  const known = head.length + tail.length;
  if (halves.length === 1 ? known !== 8 : known > 7) return null;
  return [...head, ...Array<bigint>(8 - known).fill(0n), ...tail].reduce((v, g) => (v << 16n) | g, 0n);
}

/** `.`/`..` segments of an ipc path resolved (so a prefix cannot be escaped with `../`). */
function normalizePath(p: string): string {
  const out: string[] = [];
  for (const seg of p.split('/')) {
    if (seg === '.') continue;
    if (seg === '..') { if (out.length > 1) out.pop(); continue; }
    out.push(seg);
  }
  return out.join('/');
}

function parseRule(entry: string): Rule | string {
  const e = entry.trim();
  const scheme = /^(ipc|inproc):\/\/(.*)$/.exec(e);
  if (scheme) {
    if (scheme[2] === '') return `${JSON.stringify(entry)}: an ${scheme[1]}:// entry needs a path prefix`;
    return { kind: 'prefix', scheme: scheme[1], prefix: scheme[1] === 'ipc' ? normalizePath(scheme[2]) : scheme[2] };
  }
  if (e.includes('://')) return `${JSON.stringify(entry)}: only ipc:// and inproc:// prefixes take a scheme (tcp entries are hosts or CIDRs)`;
  const slash = e.indexOf('/');
  if (slash >= 0) {
    const addr = e.slice(0, slash).replace(/^\[(.*)\]$/, '$1');
    const bits = /^\d{1,3}$/.test(e.slice(slash + 1)) ? Number(e.slice(slash + 1)) : NaN;
    const v4 = ipv4(addr), v6 = v4 === null ? ipv6(addr) : null;
    const width = v4 !== null ? 32 : 128;
    if ((v4 === null && v6 === null) || !(bits >= 0 && bits <= width)) return `${JSON.stringify(entry)}: not a CIDR block (e.g. 10.0.0.0/8, fd00::/8)`;
    const shift = BigInt(width - bits);
    return { kind: 'cidr', bits, width, net: ((v4 ?? v6) as bigint) >> shift };
  }
  if (e === '' || !/^[A-Za-z0-9.*:_[\]-]+$/.test(e)) return `${JSON.stringify(entry)}: not a host pattern, CIDR block or ipc:// prefix`;
  const host = e.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const re = new RegExp(`^${host.split('*').map((p) => p.replace(/[.\\[\]()+?^${}|-]/g, '\\$&')).join('.*')}$`);
  return { kind: 'host', re };
}

/** The tcp host of an endpoint (brackets of an IPv6 literal removed), or null when there is none. */
function tcpHost(addr: string): string | null {
  if (addr.startsWith('[')) {
    const close = addr.indexOf(']');
    return close > 1 ? addr.slice(1, close) : null;
  }
  const colon = addr.lastIndexOf(':');
  return colon > 0 ? addr.slice(0, colon) : null;
}

function allows(rules: readonly Rule[], endpoint: string): boolean {
  const at = endpoint.indexOf('://');
  if (at < 0) return false;
  const scheme = endpoint.slice(0, at), addr = endpoint.slice(at + 3);
  if (scheme === 'ipc' || scheme === 'inproc') {
    const path = scheme === 'ipc' ? normalizePath(addr) : addr;
    return rules.some((r) => r.kind === 'prefix' && r.scheme === scheme && path.startsWith(r.prefix));
  }
  if (scheme !== 'tcp') return false;
  const host = tcpHost(addr);
  if (host === null) return false;
  const lower = host.toLowerCase();
  const v4 = ipv4(host);
  const v6 = v4 === null ? ipv6(host) : null;
  // an IPv4-mapped IPv6 literal (::ffff:a.b.c.d) also matches IPv4 blocks
  const mapped = v6 !== null && v6 >> 32n === 0xffffn ? v6 & 0xffffffffn : null;
  return rules.some((r) => {
    if (r.kind === 'host') return r.re.test(lower);
    if (r.kind !== 'cidr') return false;
    const ip = r.width === 32 ? v4 ?? mapped : v6;
    return ip !== null && ip >> BigInt(r.width - r.bits) === r.net;
  });
}

/**
 * The policy of an `--allowed-endpoints` list (comma-separated text or entries). Throws an Error
 * listing every malformed entry. An empty list allows every endpoint.
 */
export function endpointPolicy(spec: string | readonly string[]): EndpointPolicy {
  const entries = (typeof spec === 'string' ? spec.split(',') : [...spec]).map((s) => s.trim()).filter((s) => s.length > 0);
  const rules: Rule[] = [];
  const problems: string[] = [];
  for (const entry of entries) {
    const r = parseRule(entry);
    if (typeof r === 'string') problems.push(r); else rules.push(r);
  }
  if (problems.length > 0) throw new Error(problems.join('; '));
  if (rules.length === 0) return () => null;
  return (endpoint) => (allows(rules, endpoint) ? null : `endpoint ${JSON.stringify(endpoint.slice(0, 256))} is not in --allowed-endpoints`);
}
