/**
 * What the routes read from a request besides the body: the `worker_id` path parameter (u64),
 * the `model_name`/`routing_group` query filter, the `x-dynamo-meta-policy-class` header and
 * an AbortSignal that fires when the client goes away (Dynamo `lib/kv-router/src/services/selection/server.rs`, `lib/kv-router/src/services/selection/core/workers.rs`, `lib/kv-router/src/services/selection/core/run.rs`).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { SelectionError } from '../core/errors.js';
import type { FilterQuery } from '../core/wire/schemas.js';
import type { SelectOptions } from '../core/wire/types.js';
import { U64_MAX } from '../core/wire/json.js';


/** Header naming the policy class on the two select routes. */
export const POLICY_CLASS_HEADER = 'x-dynamo-meta-policy-class';

/**
 * A path segment as u64, as Rust's `u64::from_str` reads it (optional `+`, decimal digits).
 * Anything else is a 400 with axum's Path-rejection text.
 */
export function pathU64(name: string, raw: string): bigint {
  if (/^\+?\d{1,20}$/.test(raw)) {
    const v = BigInt(raw);
    if (v <= U64_MAX) return v;
  }
  throw new SelectionError('SEL_INVALID_PATH', `Invalid URL: Cannot parse \`${name}\` with value \`${raw}\` to a \`u64\``);
}

/** `?model_name=&routing_group=` (other keys ignored); a repeated key is a 400, as serde_urlencoded says. */
export function filterQuery(query: unknown): FilterQuery {
  const q = (query ?? {}) as Record<string, unknown>;
  const out: FilterQuery = {};
  for (const key of ['model_name', 'routing_group'] as const) {
    const v = q[key];
    if (v === undefined) continue;
    if (typeof v !== 'string') {
      throw new SelectionError('SEL_BAD_REQUEST', `Failed to deserialize query string: duplicate field \`${key}\``);
    }
    out[key] = v;
  }
  return out;
}

/**
 * Options of a select call: the policy class (trimmed; empty ignored) and a signal aborted when
 * the connection closes before the response is written, so a queued selection frees its claim.
 *
 * The signal is made on first read: the core reads it only when a request queues, and an
 * AbortController per request cost ~3% of a `/select` (bench/http.bench.ts profile; aborting it
 * after every response, as light-my-request's 'close' would, cost as much again in DOMExceptions).
 */
export function selectOptions(req: FastifyRequest, reply: FastifyReply): SelectOptions {
  const raw = req.headers[POLICY_CLASS_HEADER];
  const cls = (Array.isArray(raw) ? raw[0] : raw)?.trim();
  let ac: AbortController | null = null;
  let gone = false;
  // 'close' on the response fires both after a normal finish and when the socket dies first;
  // only the second means the client went away.
  reply.raw.once('close', () => {
    if (reply.raw.writableFinished) return;
    gone = true;
    ac?.abort();
  });
  const opts: SelectOptions = {
    get signal(): AbortSignal {
      if (!ac) {
        ac = new AbortController();
        if (gone) ac.abort();
      }
      return ac.signal;
    },
  };
  if (cls) opts.policyClass = cls;
  return opts;
}
