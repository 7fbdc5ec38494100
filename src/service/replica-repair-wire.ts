/**
 * The anti-entropy messages of the replica mesh (select-service's own; Dynamo has no resync): two
 * frames `[topic, msgpack map]` on the topic `select-service.anti-entropy.v1`, published on the
 * same PUB as the lifecycle and binding events so that, from one peer, they arrive in the order
 * they were sent, after the events sent before them.
 *
 * Compatibility: a ZMQ PUB sends a message only to subscribers of a prefix of its topic. Dynamo's
 * selectors and select-service before anti-entropy subscribe to `dynamo.slot-tracker.v1` and
 * `dynamo.session-affinity.v1` only, so they never receive these messages (nothing to ignore).
 *
 * Kinds (`k`), each with the sender's `router_id` (`from`) and its own sequence number on this
 * topic (`seq`, +1 per message, so a receiver sees a lost one):
 * - `digest`: what the sender holds, per (partition, owner), as bucketed hashes (replica-digest.ts),
 *   with how many lifecycle and binding messages it has published (a receiver counts the ones it
 *   missed) and the replicas it hears (so a peer knows the mesh works both ways);
 * - `want` -> `list`: the ids (with worker, rank, age, prefill state) of some buckets of one group;
 * - `fetch` -> `bookings`: whole bookings, to book again what a peer lacks;
 * - `free`: ids freed here that a peer may still hold (a DELETE of an id unknown here, a free that
 *   a peer's list shows was missed).
 * Every array and string is bounded on decode; anything else is a malformed message.
 */
import { Packr, Unpackr } from 'msgpackr';
import { LIMITS } from '../core/config/config.js';
import { toU64 } from '../core/wire/json.js';

export const REPAIR_TOPIC = 'select-service.anti-entropy.v1';

/** Largest arrays one message may carry (senders chunk below these). */
export const REPAIR_MAX = { groups: 1024, entries: 4096, ids: 4096, bookings: 1024, hears: 1024 } as const;

/** A partition as messages name it. */
export interface PartRef { modelName: string; routingGroup: string; blockSize: number }

/** One (partition, owner) group of a digest: `n` buckets, `buckets` = [index, count, xorLo, xorHi] per non-empty bucket. */
export interface DigestGroup extends PartRef { owner: bigint; n: number; buckets: number[] }

/** An id of a `list` reply. */
export interface ListEntry { id: string; workerId: bigint; dpRank: number; ageMs: number; prefillDone: boolean }

/** A whole booking of a `bookings` reply: `seq` holds the prompt's tracking hashes as (lo, hi) u32 words. */
export interface RepairBooking {
  id: string; workerId: bigint; dpRank: number; owner: bigint; ageMs: number; prefillTokens: number; prefillDone: boolean;
  expectedOutputTokens: number | null; loraName: string | null; seq: Uint32Array;
}

export type RepairBody =
  | { kind: 'digest'; round: number; final: boolean; sentLifecycle: number; sentAffinity: number; hears: bigint[]; groups: DigestGroup[] }
  | { kind: 'want'; to: bigint; req: number; part: PartRef; owner: bigint; n: number; buckets: number[] }
  | { kind: 'list'; to: bigint; req: number; done: boolean; entries: ListEntry[] }
  | { kind: 'fetch'; to: bigint; req: number; part: PartRef; ids: string[] }
  | { kind: 'bookings'; to: bigint; req: number; done: boolean; items: RepairBooking[] }
  | { kind: 'free'; ids: string[] };

export type RepairMessage = { from: bigint; seq: number } & RepairBody;

const packr = new Packr({ useRecords: false, variableMapSize: true, largeBigIntToFloat: false });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'bigint' });

/** A u64 as rmp-serde writes it: numbers up to 32 bits, bigint above. */
const wire = (v: bigint): bigint | number => (v <= 0xffffffffn ? Number(v) : v);
const part = (p: PartRef) => ({ m: p.modelName, g: p.routingGroup, bs: p.blockSize });

/** Encodes a message (payload frame). */
export function encodeRepair(m: RepairMessage): Buffer {
  const head = { k: m.kind, from: wire(m.from), seq: m.seq };
  switch (m.kind) {
    case 'digest':
      return packr.pack({
        ...head, round: m.round, final: m.final, sl: m.sentLifecycle, sa: m.sentAffinity, hears: m.hears.map(wire),
        groups: m.groups.map((g) => ({ ...part(g), owner: wire(g.owner), n: g.n, b: g.buckets })),
      });
    case 'want': return packr.pack({ ...head, to: wire(m.to), req: m.req, ...part(m.part), owner: wire(m.owner), n: m.n, b: m.buckets });
    case 'list':
      return packr.pack({
        ...head, to: wire(m.to), req: m.req, done: m.done,
        e: m.entries.map((e) => [e.id, wire(e.workerId), e.dpRank, e.ageMs, e.prefillDone]),
      });
    case 'fetch': return packr.pack({ ...head, to: wire(m.to), req: m.req, ...part(m.part), ids: m.ids });
    case 'bookings':
      return packr.pack({
        ...head, to: wire(m.to), req: m.req, done: m.done,
        items: m.items.map((b) => ({
          id: b.id, w: wire(b.workerId), r: b.dpRank, owner: wire(b.owner), age: b.ageMs, pt: b.prefillTokens, pd: b.prefillDone,
          eot: b.expectedOutputTokens, lora: b.loraName, seq: new Uint8Array(b.seq.buffer, b.seq.byteOffset, b.seq.byteLength),
        })),
      });
    case 'free': return packr.pack({ ...head, ids: m.ids });
  }
}

class Malformed extends Error {}
const bad = (what: string): never => { throw new Malformed(`anti-entropy message: bad ${what}`); };
const isMap = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
const u64 = (v: unknown, what: string): bigint => toU64(v) ?? bad(what);
const uint = (v: unknown, what: string, max = 0xffffffff): number => {
  const n = typeof v === 'bigint' ? Number(v) : v;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= max ? n : bad(what);
};
const str = (v: unknown, what: string): string => (typeof v === 'string' && v.length <= LIMITS.maxStringChars ? v : bad(what));
const bool = (v: unknown, what: string): boolean => (typeof v === 'boolean' ? v : bad(what));
const arr = (v: unknown, what: string, max: number): unknown[] => (Array.isArray(v) && v.length <= max ? v : bad(what));
const partOf = (v: Record<string, unknown>): PartRef => ({ modelName: str(v.m, 'm'), routingGroup: str(v.g, 'g'), blockSize: uint(v.bs, 'bs') });

/** Decodes a payload; throws on anything that is not a well-formed message of a known kind. */
export function decodeRepair(buf: Uint8Array): RepairMessage {
  const v: unknown = unpackr.unpack(buf);
  if (!isMap(v)) return bad('envelope');
  const head = { from: u64(v.from, 'from'), seq: uint(v.seq, 'seq', Number.MAX_SAFE_INTEGER) };
  const num = (x: unknown, what: string) => uint(x, what, Number.MAX_SAFE_INTEGER);
  switch (v.k) {
    case 'digest':
      return {
        ...head, kind: 'digest', round: num(v.round, 'round'), final: bool(v.final, 'final'), sentLifecycle: num(v.sl, 'sl'),
        sentAffinity: num(v.sa, 'sa'), hears: arr(v.hears, 'hears', REPAIR_MAX.hears).map((h) => u64(h, 'hears')),
        groups: arr(v.groups, 'groups', REPAIR_MAX.groups).map((g) => {
          if (!isMap(g)) return bad('group');
          const n = uint(g.n, 'n', 64);
          const b = arr(g.b, 'buckets', 4 * 64).map((x) => uint(x, 'bucket'));
          if (b.length % 4 !== 0 || b.some((x, i) => i % 4 === 0 && x >= n)) return bad('buckets');
          return { ...partOf(g), owner: u64(g.owner, 'owner'), n, buckets: b };
        }),
      };
    case 'want': {
      const n = uint(v.n, 'n', 64);
      return {
        ...head, kind: 'want', to: u64(v.to, 'to'), req: num(v.req, 'req'), part: partOf(v), owner: u64(v.owner, 'owner'), n,
        buckets: arr(v.b, 'buckets', 64).map((x) => uint(x, 'bucket', n - 1)),
      };
    }
    case 'list':
      return {
        ...head, kind: 'list', to: u64(v.to, 'to'), req: num(v.req, 'req'), done: bool(v.done, 'done'),
        entries: arr(v.e, 'entries', REPAIR_MAX.entries).map((e) => {
          const x = arr(e, 'entry', 5);
          return { id: str(x[0], 'id'), workerId: u64(x[1], 'worker'), dpRank: uint(x[2], 'rank'), ageMs: num(x[3], 'age'), prefillDone: bool(x[4], 'prefill') };
        }),
      };
    case 'fetch':
      return { ...head, kind: 'fetch', to: u64(v.to, 'to'), req: num(v.req, 'req'), part: partOf(v), ids: arr(v.ids, 'ids', REPAIR_MAX.ids).map((x) => str(x, 'id')) };
    case 'bookings':
      return {
        ...head, kind: 'bookings', to: u64(v.to, 'to'), req: num(v.req, 'req'), done: bool(v.done, 'done'),
        items: arr(v.items, 'items', REPAIR_MAX.bookings).map((b) => {
          if (!isMap(b) || !(b.seq instanceof Uint8Array) || b.seq.byteLength % 8 !== 0 || b.seq.byteLength > LIMITS.maxPromptItems * 8) return bad('booking');
          const words = new Uint32Array(b.seq.byteLength / 4);
          new Uint8Array(words.buffer).set(b.seq);
          return {
            id: str(b.id, 'id'), workerId: u64(b.w, 'worker'), dpRank: uint(b.r, 'rank'), owner: u64(b.owner, 'owner'), ageMs: num(b.age, 'age'),
            prefillTokens: num(b.pt, 'prefill tokens'), prefillDone: bool(b.pd, 'prefill'),
            expectedOutputTokens: b.eot == null ? null : uint(b.eot, 'expected output'), loraName: b.lora == null ? null : str(b.lora, 'lora'), seq: words,
          };
        }),
      };
    case 'free': return { ...head, kind: 'free', ids: arr(v.ids, 'ids', REPAIR_MAX.ids).map((x) => str(x, 'id')) };
    default: return bad('kind');
  }
}
