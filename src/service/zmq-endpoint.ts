/**
 * ZMQ endpoint validation (Dynamo `lib/kv-router/src/services/common/replica_sync.rs`, Dynamo's `zmq.rs validate_endpoint`): `tcp://host:port`
 * needs a host and a u16 port (IPv6 hosts bracketed, `*` allowed for binds); `ipc://` and
 * `inproc://` take any non-empty address; other schemes are rejected. Returns the reason an
 * endpoint is invalid, or null when it is valid.
 */
export function validateZmqEndpoint(endpoint: string): string | null {
  const at = endpoint.indexOf('://');
  if (at < 0) return 'missing scheme';
  const scheme = endpoint.slice(0, at);
  const addr = endpoint.slice(at + 3);
  if (scheme === 'ipc' || scheme === 'inproc') return addr.length > 0 ? null : 'missing address';
  if (scheme !== 'tcp') return `unsupported scheme \`${scheme}\``;
  let host: string, port: string;
  if (addr.startsWith('[')) {
    const close = addr.indexOf(']');
    if (close < 0) return 'unterminated IPv6 address';
    host = addr.slice(1, close);
    if (addr[close + 1] !== ':') return 'missing port';
    port = addr.slice(close + 2);
  } else {
    const colon = addr.lastIndexOf(':');
    if (colon < 0) return 'missing port';
    host = addr.slice(0, colon);
    port = addr.slice(colon + 1);
    if (host.includes(':')) return 'IPv6 addresses must be bracketed';
  }
  if (host.length === 0) return 'missing host';
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) return `invalid port \`${port}\``;
  return null;
}

/** Whether a tcp endpoint names an IPv6 host (`ZMQ_IPV6` is set for those, Dynamo `lib/kv-router/src/services/common/replica_sync.rs`). */
export const isIpv6Endpoint = (endpoint: string): boolean => endpoint.startsWith('tcp://[');
