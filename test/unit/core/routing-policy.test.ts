/**
 * The named routing policies' syntax (`--routing-policy`, `SELECT_SERVICE_ROUTING_POLICY`):
 * names, parameters over their defaults, each parameter's rule, and the configuration's errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseRoutingPolicy, ROUTING_POLICIES, TTFT_DEFAULTS } from '../../../src/core/select/routing-policy.js';
import { parseRouterConfig } from '../../../src/core/config/config.js';

test('routing-policy syntax, and the configuration names the variable or flag on error', () => {
  assert.deepEqual(parseRoutingPolicy('kv'), { kind: 'kv', params: {} });
  const t = parseRoutingPolicy(' ttft:evict_weight=0.25:tie_tolerance=0.01 ');
  assert.deepEqual(t, { kind: 'ttft', params: { ...TTFT_DEFAULTS, evict_weight: 0.25, tie_tolerance: 0.01 } });
  assert.throws(() => parseRoutingPolicy('fast'), new RegExp(`unknown routing policy "fast" \\(known: ${ROUTING_POLICIES.join(', ')}\\)`));
  assert.throws(() => parseRoutingPolicy('ttft:evict_weight=-1'), /"evict_weight" must be a finite number >= 0 \(got -1\)/);
  assert.throws(() => parseRoutingPolicy('ttft:evict_weight'), /"evict_weight" must be a finite number/);
  assert.throws(() => parseRoutingPolicy('ttft:x=1'), /ttft: unknown parameter "x" \(known: delay_weight, evict_weight, tie_tolerance, spread_secs, factor_se\)/);
  assert.throws(() => parseRoutingPolicy('kv:x=1'), /kv takes no parameters/);
  assert.equal(parseRouterConfig({}).routingPolicy, null);
  assert.equal(parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'ttft' }).routingPolicy, 'ttft');
  assert.throws(() => parseRouterConfig({ SELECT_SERVICE_ROUTING_POLICY: 'fifo' }), /SELECT_SERVICE_ROUTING_POLICY: unknown routing policy "fifo"/);
  assert.throws(() => parseRouterConfig({}, { routingPolicy: 'ttft:x=1' }), /--routing-policy: ttft: unknown parameter "x"/);
});

test('parameter rules: fractions, integers and positives are checked by name', () => {
  assert.throws(() => parseRoutingPolicy('llmd:cpu_weight=1.5'), /"cpu_weight" must be a finite number in \[0, 1\]/);
  assert.throws(() => parseRoutingPolicy('llmd:prefix_min_max=0.5'), /"prefix_min_max" must be an integer in \[0, 1\]/);
  assert.equal(parseRoutingPolicy('llmd:prefix_min_max=1').params.prefix_min_max, 1);
});
