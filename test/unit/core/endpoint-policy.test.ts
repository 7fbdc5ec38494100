/** `--allowed-endpoints` (issue 15): host patterns, CIDR blocks, ipc:// prefixes; the core refuses a worker outside them with a 422. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endpointPolicy } from '../../../src/core/catalog/endpoint-policy.js';
import { stringifyJson } from '../../../src/core/wire/json.js';
import { makeCore, rejects, worker } from './core-helpers.js';

const allowed = (spec: string, endpoint: string): boolean => endpointPolicy(spec)(endpoint) === null;

test('host patterns match the whole tcp host, case-insensitively, * for any run of characters; ports are free', () => {
  const spec = '*.gpu.internal, worker-*, 10.0.0.7, [fd00::1]';
  assert.ok(allowed(spec, 'tcp://a.gpu.internal:5557'));
  assert.ok(allowed(spec, 'tcp://A.B.GPU.internal:1'));
  assert.ok(allowed(spec, 'tcp://worker-12:5557'));
  assert.ok(allowed(spec, 'tcp://10.0.0.7:9'));
  assert.ok(allowed(spec, 'tcp://[fd00::1]:9'));
  assert.ok(!allowed(spec, 'tcp://gpu.internal:5557'));
  assert.ok(!allowed(spec, 'tcp://evil.gpu.internal.attacker.com:5557'));
  assert.ok(!allowed(spec, 'tcp://10.0.0.70:9'));
  assert.ok(!allowed(spec, 'ipc:///tmp/x'));
});

test('CIDR blocks match IP literals (IPv4, IPv6, IPv4-mapped IPv6), never host names', () => {
  const spec = '10.0.0.0/8,192.168.1.0/24,fd00::/8';
  assert.ok(allowed(spec, 'tcp://10.255.3.4:5557'));
  assert.ok(allowed(spec, 'tcp://192.168.1.200:1'));
  assert.ok(!allowed(spec, 'tcp://192.168.2.1:1'));
  assert.ok(allowed(spec, 'tcp://[fd12:3456::7]:1'));
  assert.ok(!allowed(spec, 'tcp://[fe80::1]:1'));
  assert.ok(allowed(spec, 'tcp://[::ffff:10.1.2.3]:1'));
  assert.ok(!allowed(spec, 'tcp://localhost:1'), 'names are not resolved');
  assert.ok(allowed('0.0.0.0/0', 'tcp://1.2.3.4:1'));
  assert.ok(allowed('::/0', 'tcp://[::1]:1'));
});

test('ipc:// and inproc:// entries are path prefixes; .. cannot climb out of them', () => {
  const spec = 'ipc:///run/vllm/, inproc://kv-';
  assert.ok(allowed(spec, 'ipc:///run/vllm/engine-0.sock'));
  assert.ok(!allowed(spec, 'ipc:///run/vllm/../secret.sock'));
  assert.ok(!allowed(spec, 'ipc:///run/vllm-other/x'));
  assert.ok(allowed(spec, 'inproc://kv-1'));
  assert.ok(!allowed(spec, 'tcp://kv-1:1'));
});

test('an empty list allows everything; malformed entries are all reported', () => {
  assert.ok(allowed('', 'tcp://anything:1'));
  assert.throws(() => endpointPolicy('tcp://x:1, 10.0.0.0/33, bad host, ipc://'),
    /"tcp:\/\/x:1": only ipc:\/\/ and inproc:\/\/ .*"10.0.0.0\/33": not a CIDR block.*"bad host": not a host pattern.*"ipc:\/\/": an ipc:\/\/ entry needs a path prefix/);
  assert.match(endpointPolicy('a')('tcp://b:1') ?? '', /endpoint "tcp:\/\/b:1" is not in --allowed-endpoints/);
});

test('a worker naming an endpoint outside the list is a 422 naming the field and the endpoint; nothing changes', async () => {
  const { core } = makeCore({}, { endpointPolicy: endpointPolicy('10.0.0.0/8, ipc:///run/vllm/') });
  core.upsertWorker(worker(1, { kv_events_endpoint: 'tcp://10.1.1.1:5557' }));
  const before = stringifyJson([core.listWorkers(), core.loads()]);
  await rejects(() => core.upsertWorker(worker(2, { kv_events_endpoint: 'tcp://169.254.169.254:80' })), 422,
    /kv_events_endpoint: endpoint "tcp:\/\/169.254.169.254:80" is not in --allowed-endpoints/);
  await rejects(() => core.upsertWorker(worker(2, { kv_events_endpoints: { 0: 'tcp://10.0.0.1:1', 1: 'ipc:///etc/x' } })), 422,
    /kv_events_endpoints.1: endpoint "ipc:\/\/\/etc\/x"/);
  await rejects(() => core.upsertWorker(worker(2, { replay_endpoint: 'tcp://example.com:5558' })), 422, /replay_endpoint: endpoint/);
  await rejects(() => core.patchWorker(1n, { kv_events_endpoint: 'tcp://example.com:1' }), 422, /kv_events_endpoint: endpoint/);
  assert.equal(stringifyJson([core.listWorkers(), core.loads()]), before);
  assert.equal(core.upsertWorker(worker(2, { kv_events_endpoint: 'ipc:///run/vllm/2.sock' })).lifecycle, 'schedulable');
});
