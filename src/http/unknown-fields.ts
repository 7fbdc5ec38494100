/**
 * Finding the body fields a route does not know. Dynamo's request types ignore unknown fields
 * (serde's default) and so do our schemas; the HTTP layer finds them so the service can warn and
 * count (src/service/unknown-fields.ts). The known names come from the route's request schema,
 * read once when the routes are mounted: the top level, and the objects nested in it whose schema
 * lists its fields (`session_context`, `router_config_override`, `mm_routing_info`, ...); maps
 * (`topology_domains`) and lists (`block_mm_infos`) are not looked into.
 *
 * Cost for a body without unknown fields: one `Set` lookup per top-level key, plus one `Map`
 * lookup per key when the route has nested objects (bench/RESULTS.md, "Unknown fields").
 */
import type * as z from 'zod';

/** The fields of one object of a request. */
export interface KnownFields {
  /** Prefix of this object's fields in reports (`''` at the top, `session_context.` inside it). */
  readonly prefix: string;
  readonly keys: ReadonlySet<string>;
  /** The same names, prefixed, for suggestions. */
  readonly names: readonly string[];
  /** Fields whose value is an object with known fields. */
  readonly nested: ReadonlyMap<string, KnownFields>;
}

/** What zod v4 keeps of a schema: its definition. */
interface Def { type: string; in?: Schema; innerType?: Schema; shape?: Record<string, Schema>; catchall?: Schema }
type Schema = { _zod: { def: Def } };

/** The object schema under optional / nullable / default / pipe wrappers, if it strips unknown keys. */
function objectDef(schema: Schema): Def | null {
  let def = schema._zod.def;
  for (let i = 0; i < 16; i++) {
    if (def.type === 'object') return def.catchall === undefined && def.shape !== undefined ? def : null;
    const next = def.type === 'pipe' ? def.in : def.innerType;
    if (next === undefined) return null;
    def = next._zod.def;
  }
  return null;
}

/** The known fields of a request schema (null when it is not an object that ignores unknown keys). */
export function knownFields(schema: z.ZodType, prefix = ''): KnownFields | null {
  const def = objectDef(schema as unknown as Schema);
  if (def === null) return null;
  const shape = def.shape as Record<string, Schema>;
  const nested = new Map<string, KnownFields>();
  for (const [k, v] of Object.entries(shape)) {
    const sub = knownFields(v as unknown as z.ZodType, `${prefix}${k}.`);
    if (sub !== null) nested.set(k, sub);
  }
  const keys = Object.keys(shape);
  return { prefix, keys: new Set(keys), names: keys.map((k) => prefix + k), nested };
}

/** Calls `found` with each field of `body` (and of its known nested objects) that `known` does not list. */
export function findUnknownFields(body: Record<string, unknown>, known: KnownFields,
  found: (field: string, known: KnownFields) => void): void {
  const nested = known.nested.size > 0 ? known.nested : null;
  for (const k in body) {
    if (!known.keys.has(k)) { found(known.prefix + k, known); continue; }
    if (nested === null) continue;
    const sub = nested.get(k);
    if (sub === undefined) continue;
    const v = body[k];
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) findUnknownFields(v as Record<string, unknown>, sub, found);
  }
}

/**
 * The check a route runs on its body before the handler, or null when the route takes no JSON
 * object or the service does not take reports. `url` is the route's Fastify path (`:param`).
 */
export function unknownFieldCheck(url: string, schema: z.ZodType | undefined,
  report: ((route: string, field: string, known: readonly string[]) => void) | undefined): ((body: unknown) => void) | null {
  const known = schema === undefined || report === undefined ? null : knownFields(schema);
  if (known === null || report === undefined) return null;
  const route = url.replace(/:(\w+)/g, '{$1}');
  const found = (field: string, k: KnownFields): void => report(route, field, k.names);
  return (body) => {
    if (body !== null && typeof body === 'object' && !Array.isArray(body)) findUnknownFields(body as Record<string, unknown>, known, found);
  };
}
