/**
 * select-service at the edge: a Cloudflare Worker with an embedded selection core in approximate
 * mode (no KV events at the edge: the index is fed by the bookings it makes) and the
 * routing-policy simulator. Routes (JSON bodies, u64 ids and hashes digit-exact):
 *
 *   POST /simulate?policies=kv,round_robin&workers=8&limit=1000   body: a Mooncake trace (JSONL)
 *        -> the simulation report (one row per policy), as `select-service simulate --json`
 *   POST /select, /select_and_reserve, /reservations, /reservations/{id}/prefill_complete,
 *        /reservations/{id}/output_block; DELETE /reservations/{id}; GET /loads, /ready, /health
 *        -> as the service answers them
 *   GET /workers; POST /workers; DELETE /workers/{id}   the catalog (see below)
 *
 * Workers are registered from the `WORKERS` var (wrangler.toml: an array of worker records, as
 * `POST /workers` takes them) when the isolate starts its core; `POST /workers` adds to that
 * isolate only. The core's state (index, loads, bookings) lives in the isolate's memory: one
 * isolate, one core. See docs/edge-runtimes.md in the select-service repository.
 *
 * Workers refuse to compile WebAssembly from bytes, so the index comes in as a module compiled
 * at deploy time (wrangler's CompiledWasm rule for *.wasm) and is handed over before first use.
 */
import {
  SelectionCore, SelectionError, errorBody, parseJson, parseRouterConfig, parseTrace, reportJson, simulate, stringifyJson,
  systemClock, systemRng, toSelectionError, useWasmModule,
} from 'select-service/browser';
import wasm from './select-service.wasm';

useWasmModule(wasm);

/** Requests one POST /simulate may replay unless the `SIM_MAX_REQUESTS` var says otherwise. */
const SIM_MAX_REQUESTS = 2000;
/** Largest request body read (the service's limit). */
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/** The isolate's core, made on the first request (env is known then), or the error that prevented it. */
let state = null;

/** A 201 answer (the routes that create). */
class Created { constructor(body) { this.body = body; } }

function bad(message) { return new SelectionError('SEL_BAD_REQUEST', message); }

/** The router configuration from the `DYN_ROUTER_*` vars; KV events are off at the edge. */
function edgeConfig(env) {
  const vars = Object.fromEntries(Object.entries(env).filter(([k, v]) => k.startsWith('DYN_') && typeof v === 'string'));
  if (vars.DYN_ROUTER_USE_KV_EVENTS !== undefined && vars.DYN_ROUTER_USE_KV_EVENTS !== 'false') {
    throw new Error('DYN_ROUTER_USE_KV_EVENTS must be "false" at the edge (no ZeroMQ KV events in a Worker): remove the var or set it to "false"');
  }
  return parseRouterConfig({ ...vars, DYN_ROUTER_USE_KV_EVENTS: 'false' });
}

/** The worker records of the `WORKERS` var: a JSON array (a TOML array in wrangler.toml, or a JSON string). */
function configuredWorkers(env) {
  const raw = env.WORKERS ?? [];
  const list = typeof raw === 'string' ? parseJson(raw) : raw;
  if (!Array.isArray(list)) throw new Error('the WORKERS var must be an array of worker records (as POST /workers takes them)');
  return list;
}

function coreFor(env) {
  if (state === null) {
    try {
      const core = SelectionCore.newLocal(edgeConfig(env), { clock: systemClock, rng: systemRng() });
      for (const w of configuredWorkers(env)) {
        const rec = core.upsertWorker(w);
        // a record the core cannot schedule is kept (as the service keeps it) and said once
        if (rec.lifecycle !== 'schedulable') console.warn(`worker ${rec.worker_id} is ${rec.lifecycle}: ${rec.not_schedulable_reasons?.join('; ')}`);
      }
      for (const w of core.warnings) console.warn(w);
      state = { core };
    } catch (err) {
      console.error(`select-service: the core did not start: ${err instanceof Error ? err.message : String(err)}`);
      state = { error: err };
    }
  }
  if (state.error !== undefined) throw new SelectionError('SEL_INTERNAL', `the core did not start: ${state.error.message ?? state.error}`);
  return state.core;
}

async function readBody(request) {
  const len = Number(request.headers.get('content-length') ?? 0);
  if (len > MAX_BODY_BYTES) throw new SelectionError('SEL_BODY_TOO_LARGE', `body over ${MAX_BODY_BYTES} bytes`);
  const text = await request.text();
  if (text.length > MAX_BODY_BYTES) throw new SelectionError('SEL_BODY_TOO_LARGE', `body over ${MAX_BODY_BYTES} bytes`);
  return text;
}

async function jsonBody(request) {
  let body;
  try { body = parseJson(await readBody(request)); } catch (err) {
    if (err instanceof SelectionError) throw err;
    throw new SelectionError('SEL_INVALID_JSON', `invalid JSON body: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new SelectionError('SEL_UNPROCESSABLE', 'the body must be a JSON object');
  return body;
}

/** A number query parameter (positive integer with `int`), or undefined when absent. */
function param(url, name, int = true) {
  const v = url.searchParams.get(name);
  if (v === null) return undefined;
  const n = Number(v);
  if (int ? !(Number.isInteger(n) && n >= 1) : !Number.isFinite(n)) {
    throw bad(`${name}: expected ${int ? 'a positive integer' : 'a number'} (got ${JSON.stringify(v)})`);
  }
  return n;
}

/** POST /simulate: the trace in the body, options in the query. */
async function runSimulation(request, url, env) {
  const text = await readBody(request); // first: an answer sent while the client still uploads can reset the connection
  const max = Number(env.SIM_MAX_REQUESTS ?? SIM_MAX_REQUESTS);
  const limit = param(url, 'limit');
  if (limit > max) throw bad(`limit: at most ${max} requests per simulation here (the SIM_MAX_REQUESTS var)`);
  let trace;
  try { trace = parseTrace(text, { limit: limit ?? max + 1 }); } catch (err) { throw bad(err.message); }
  if (trace.length > max) throw bad(`the trace has more than ${max} requests (the SIM_MAX_REQUESTS var): send fewer, or pass limit=N to replay the first N`);
  if (trace.length === 0) throw bad('the trace is empty: send Mooncake JSONL lines ({"timestamp", "input_length", "output_length", "hash_ids"})');
  const fleet = { workers: param(url, 'workers'), blockSize: param(url, 'block_size'), capacityBlocks: param(url, 'capacity_blocks') };
  const options = { policies: url.searchParams.get('policies') ?? undefined, fleet, speed: param(url, 'speed', false), seed: param(url, 'seed', false) };
  try {
    return reportJson(await simulate(trace, options));
  } catch (err) {
    throw bad(err.message); // an unknown policy, a fleet value out of range, a trace that does not fit the fleet
  }
}

/** Routes: [method, path pattern, handler(core, match, request, url, env)]. */
const ROUTES = [
  ['GET', /^\/health$/, () => ({ status: 'ok' })],
  ['GET', /^\/ready$/, (c) => c.ready()],
  ['GET', /^\/workers$/, (c, m, r, url) => c.listWorkers(Object.fromEntries(url.searchParams))],
  ['POST', /^\/workers$/, async (c, m, r) => new Created(c.upsertWorker(await jsonBody(r)))],
  ['DELETE', /^\/workers\/([^/]+)$/, (c, m) => c.deleteWorker(u64(m[1]))],
  ['POST', /^\/select$/, async (c, m, r) => c.select(await jsonBody(r))],
  ['POST', /^\/select_and_reserve$/, async (c, m, r) => c.selectAndReserve(await jsonBody(r))],
  ['POST', /^\/reservations$/, async (c, m, r) => new Created(await c.createReservation(await jsonBody(r)))],
  ['POST', /^\/reservations\/([^/]+)\/prefill_complete$/, (c, m) => c.prefillComplete(decodeURIComponent(m[1]))],
  ['POST', /^\/reservations\/([^/]+)\/output_block$/, async (c, m, r) => c.addOutputBlock(decodeURIComponent(m[1]), await jsonBody(r))],
  ['DELETE', /^\/reservations\/([^/]+)$/, (c, m) => c.freeReservation(decodeURIComponent(m[1]))],
  ['GET', /^\/loads$/, (c, m, r, url) => c.loads(Object.fromEntries(url.searchParams))],
  ['POST', /^\/simulate$/, (c, m, r, url, env) => runSimulation(r, url, env)],
];

function u64(text) {
  if (!/^\d{1,20}$/.test(text) || BigInt(text) > 0xffffffffffffffffn) {
    throw new SelectionError('SEL_INVALID_PATH', `worker_id: expected an unsigned 64-bit integer (got ${text})`);
  }
  return BigInt(text);
}

function json(status, body) {
  return new Response(stringifyJson(body), { status, headers: { 'content-type': 'application/json' } });
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    const matching = ROUTES.filter(([, re]) => re.test(url.pathname));
    if (matching.length === 0) return json(404, { error: 'route not found' });
    const route = matching.find(([method]) => method === request.method);
    if (!route) return json(405, { error: 'method not allowed' });
    try {
      const core = coreFor(env);
      core.maintain(); // expiry sweeps are due by the clock; an isolate has no timers between requests
      const out = await route[2](core, url.pathname.match(route[1]), request, url, env);
      return out instanceof Created ? json(201, out.body) : json(200, out);
    } catch (err) {
      const e = toSelectionError(err);
      if (e.status >= 500) console.error(`select-service: ${request.method} ${url.pathname}: ${e.message}`);
      return json(e.status, errorBody(e));
    }
  },
};
