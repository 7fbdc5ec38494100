/**
 * Request-body fields a route does not know (`modelName`, `token_id`): Dynamo's service ignores
 * them and so does this one, but a client sending them usually meant a known field, and its
 * requests quietly do something else (`model_name` missing means the `"default"` model). Each is
 * counted (`select_service_unknown_request_fields_total{route, field}`) and warned about, once per
 * (route, field) a minute with the number of occurrences in between, naming the closest known
 * field when one is close (the closest-name helper of the `DYN_ROUTER_*` warnings).
 *
 * Field names are the client's: the label set is bounded (the first {@link MAX_FIELD_LABELS}
 * distinct names, later ones count as `other`) and so is a name's length
 * ({@link MAX_FIELD_CHARS}), so memory, log volume and metric series stay bounded whatever is sent.
 */
import { closest, editDistance } from '../core/config/config-env.js';
import type { Clock } from '../core/random.js';
import type { Logger } from './logger.js';

/** Distinct field names that get their own label; later names count as `other`. */
export const MAX_FIELD_LABELS = 64;
/** A field name longer than this is cut (and marked with `…`) in labels and logs. */
export const MAX_FIELD_CHARS = 64;
/** One warning per (route, field) per this interval; the occurrences in between are counted in the next one. */
export const WARN_INTERVAL_MS = 60_000;
/** The label of the names past {@link MAX_FIELD_LABELS}. */
export const OTHER_FIELD = 'other';

interface Series { readonly route: string; readonly field: string; count: number; warnedAt: number; suppressed: number }

/** `modelName`, `Model-Name` and `model_name` read the same: lower case, without `_` and `-`. */
const looseName = (s: string): string => s.toLowerCase().replace(/[-_]/g, '');

/**
 * The name of `known` that `name` most likely meant, compared with case, `_` and `-` ignored
 * (`modelName` is `model_name`, `token_id` is `token_ids`): the {@link closest}, when at most
 * `maxEdits` edits away and fewer than half of `name`'s letters; else the one known field that
 * begins with `name` and `_` (`model`, OpenAI's name, is `model_name`); else undefined.
 */
export function closeName(name: string, known: readonly string[], maxEdits = 2): string | undefined {
  if (known.length === 0) return undefined;
  const loose = known.map(looseName);
  const want = looseName(name);
  const best = closest(want, loose);
  const d = editDistance(want, best);
  if (d <= maxEdits && d * 2 < want.length) return known[loose.indexOf(best)];
  const head = `${name.toLowerCase()}_`;
  const longer = known.filter((k) => k.toLowerCase().startsWith(head));
  return longer.length === 1 ? longer[0] : undefined;
}

/** Counts and rate-limited warnings of unknown request fields. */
export class UnknownFieldLog {
  private readonly labels = new Set<string>();
  private readonly series = new Map<string, Series>();

  constructor(private readonly logger: Logger, private readonly clock: Clock) {}

  /**
   * One unknown field in a body of `route` (a route template of ours, e.g. `/select`); `known`
   * are the fields of the same object, for the suggestion (computed only when a warning is due).
   */
  note(route: string, field: string, known: readonly string[]): void {
    const name = field.length > MAX_FIELD_CHARS ? `${field.slice(0, MAX_FIELD_CHARS - 1)}…` : field;
    let label = name;
    if (!this.labels.has(name)) {
      if (this.labels.size < MAX_FIELD_LABELS) this.labels.add(name);
      else label = OTHER_FIELD;
    }
    const key = `${route}\u0000${label}`;
    let s = this.series.get(key);
    const now = this.clock.now();
    if (s === undefined) {
      s = { route, field: label, count: 0, warnedAt: -Infinity, suppressed: 0 };
      this.series.set(key, s);
    }
    s.count++;
    if (now - s.warnedAt < WARN_INTERVAL_MS) { s.suppressed++; return; }
    const suggestion = closeName(field, known);
    const parts = [`unknown field ${JSON.stringify(name)} in a ${route} body is ignored`];
    if (suggestion !== undefined) parts.push(` (did you mean ${JSON.stringify(suggestion)}?)`);
    if (label === OTHER_FIELD) parts.push(`; counted as field="${OTHER_FIELD}": ${MAX_FIELD_LABELS} other names already have their own label`);
    if (s.suppressed > 0) parts.push(`; ${s.suppressed} more since the last warning`);
    this.logger.warn({ route, field: name, closest: suggestion ?? null, suppressed: s.suppressed }, parts.join(''));
    s.warnedAt = now;
    s.suppressed = 0;
  }

  /** Occurrences per (route, field label), for the metric. */
  *counts(): Iterable<{ route: string; field: string; count: number }> {
    for (const s of this.series.values()) yield { route: s.route, field: s.field, count: s.count };
  }
}
