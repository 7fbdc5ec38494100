/**
 * docs/policies.md documents every workload knob with its default (the tables of "Workloads,
 * fleets and load"), so the documentation cannot drift from src/sim/workload/families.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { FAMILIES } from '../../../src/sim/workload/families.js';
import { MIXED_KNOBS } from '../../../src/sim/workload/spec.js';

test('docs/policies.md lists every family\'s knobs with their defaults', () => {
  const text = readFileSync(join(process.cwd(), 'docs/policies.md'), 'utf8');
  const at = text.indexOf('## Workloads, fleets and load');
  assert.ok(at >= 0, 'the section exists');
  const section = text.slice(at).split(/\n## /)[0];
  const documented = new Map<string, Map<string, string>>();
  let family: Map<string, string> | null = null;
  for (const line of section.split('\n')) {
    const head = /^\*\*`([a-z_]+)`\*\*:/.exec(line);
    if (head) documented.set(head[1], family = new Map());
    const row = /^\| `([a-z_]+)` \| ([^|]+) \|/.exec(line);
    if (row && family) family.set(row[1], row[2].trim());
  }
  for (const f of Object.values(FAMILIES)) {
    const rows = documented.get(f.name);
    assert.ok(rows, `${f.name} is documented`);
    assert.deepEqual([...rows.keys()], Object.keys(f.knobs), `${f.name}: the knobs, in order`);
    for (const [k, def] of Object.entries(f.knobs)) {
      assert.equal(Number(rows.get(k)!.split(' ')[0].replace(/,/g, '')), def.default, `${f.name}.${k} default`);
      assert.equal(rows.get(k)!.endsWith('per 8 ranks'), def.scaled === true, `${f.name}.${k}: scaled with the fleet`);
    }
  }
  for (const k of Object.keys(MIXED_KNOBS)) assert.match(section, new RegExp(`\`${k}\``), `mixed's ${k}`);
});
