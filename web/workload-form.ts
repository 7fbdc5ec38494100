/**
 * The page's workload and fleet pickers: a generated workload (family and `key=value` knobs, the
 * CLI's `--workload NAME:key=value...`, with the family's knobs and defaults shown under it) and a
 * named fleet (the CLI's `--fleet 8x1|16x2|64x1|mixed`, which fills in and locks the workers and
 * ranks fields; `mixed` also fixes each worker's profile).
 */
import { FAMILIES } from '../src/sim/workload/families.js';
import { MIXED_KNOBS, WORKLOAD_NAMES, parseWorkload } from '../src/sim/workload/spec.js';
import { namedFleet, type FleetConfig } from '../src/sim/fleet.js';

/** The fleets the grid runs by default, offered by name. */
const FLEETS: readonly [string, string][] = [
  ['8x1', '8 x 1 rank'], ['16x2', '16 x 2 DP ranks'], ['64x1', '64 x 1 rank'], ['mixed', 'mixed: 4 H100 + 4 A100'],
];

const el = <T extends HTMLElement>(id: string): T => {
  const e = document.getElementById(id);
  if (!e) throw new Error(`page element #${id} is missing`);
  return e as T;
};

/** `groups (16), prefix (2048), ...`: the knobs of the selected family and their defaults. */
function knobHelp(name: string): string {
  const f = FAMILIES[name];
  if (!f) return `tenants of the other families, interleaved. Knobs: ${Object.keys(MIXED_KNOBS).join(', ')}, FAMILY.knob (e.g. tenants=system_prompt/doc_qa:shares=3/1:doc_qa.documents=4).`;
  const knobs = Object.entries(f.knobs).map(([k, d]) => `${k} (${d.default}${d.scaled ? ' per 8 ranks' : ''})`);
  return `${f.about}. Knobs: ${knobs.join(', ')}.`;
}

/** Fill the selects and wire the fields (choosing a workload selects the "generated" source). */
export function initWorkloadForm(): void {
  const family = el<HTMLSelectElement>('workload');
  for (const n of WORKLOAD_NAMES) family.append(Object.assign(document.createElement('option'), { value: n, textContent: n }));
  const help = (): void => { el('workload-help').textContent = knobHelp(family.value); };
  const pick = (): void => { el<HTMLInputElement>('use-workload').checked = true; };
  family.addEventListener('change', () => { pick(); help(); });
  el('workload-knobs').addEventListener('input', pick);
  help();
  const fleet = el<HTMLSelectElement>('fleet');
  for (const [value, text] of FLEETS) fleet.append(Object.assign(document.createElement('option'), { value, textContent: text }));
  fleet.addEventListener('change', () => {
    const named = fleet.value === '' ? undefined : namedFleet(fleet.value);
    for (const [id, v] of [['workers', named?.workers], ['dp-ranks', named?.dpRanks]] as const) {
      const input = el<HTMLInputElement>(id);
      if (v !== undefined) input.value = String(v);
      input.disabled = named !== undefined;
    }
    el<HTMLSelectElement>('profile').disabled = named?.kinds !== undefined;
  });
}

/** The workload spec to generate, checked (throws naming what is wrong), or undefined for a trace. */
export function workloadSpec(): string | undefined {
  if (!el<HTMLInputElement>('use-workload').checked) return undefined;
  const knobs = el<HTMLInputElement>('workload-knobs').value.trim().replace(/^:/, '');
  const spec = knobs === '' ? el<HTMLSelectElement>('workload').value : `${el<HTMLSelectElement>('workload').value}:${knobs}`;
  parseWorkload(spec);
  return spec;
}

/** The named fleet's shape (and, for `mixed`, its kinds of workers), or nothing: the fields say. */
export function namedFleetSettings(): Partial<FleetConfig> {
  const name = el<HTMLSelectElement>('fleet').value;
  return name === '' ? {} : namedFleet(name);
}
