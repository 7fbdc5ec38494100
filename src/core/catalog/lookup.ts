/**
 * What a request without a schedulable partition looked up, and what the catalog holds instead:
 * the facts of the 503 `no schedulable workers ...` (errors.ts words them). Runs only on that
 * failure, never on a selection that finds its partition; one pass over the workers.
 */
import type { PartitionLookup } from '../errors.js';
import type { WorkerEntry } from './catalog.js';

/** Workers of the partition listed in the message (the rest are counted). */
const SAMPLE = 3;

const given = (body: Record<string, unknown> | null, field: string): boolean => body !== null && body[field] != null;

/** `modelName`, `ModelName`, `model-name`, or OpenAI's `model`: a body key meant as `model_name`. */
const MODEL_NAME_LIKE = /^model(?:[-_]?name)?$/i;

/** The facts of the 503 for a request (its raw body, when there is one) naming `(model, group)`. */
export function lookupFacts(workers: Iterable<WorkerEntry>, model: string, group: string, input: unknown): PartitionLookup {
  const body = typeof input === 'object' && input !== null && !Array.isArray(input) ? input as Record<string, unknown> : null;
  const modelAssumed = !given(body, 'model_name');
  const groupAssumed = !given(body, 'routing_group');
  const models = new Set<string>();
  const groups = new Set<string>();
  const sample: PartitionLookup['here']['sample'][number][] = [];
  let count = 0;
  let anySchedulable = false;
  for (const e of workers) {
    const r = e.req;
    models.add(r.model_name);
    if (e.lifecycle === 'schedulable') anySchedulable = true;
    if (r.model_name !== model) continue;
    if (r.routing_group !== group) { groups.add(r.routing_group); continue; }
    count++;
    if (sample.length < SAMPLE) sample.push({ workerId: r.worker_id, lifecycle: e.lifecycle, reasons: e.reasons });
  }
  // the default sort compares UTF-16 code units, as `<` does
  const sorted = (s: Set<string>): string[] => [...s].sort();
  let lookalike: string | undefined;
  // the first 64 keys at most (how many a body has is the client's choice)
  if (modelAssumed && body !== null) lookalike = Object.keys(body).slice(0, 64).find((k) => k !== 'model_name' && MODEL_NAME_LIKE.test(k));
  return {
    model, group, modelAssumed, groupAssumed, lookalike, anySchedulable,
    here: { count, sample }, otherGroups: sorted(groups), knownModels: sorted(models),
  };
}
