import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as E from '../../../src/core/errors.js';
import { ERROR_CATALOGUE, SelectionError, errorBody, partitionLabel, toSelectionError, type ErrorCode } from '../../../src/core/errors.js';

const KINDS = new Set(['bad_request', 'not_ready', 'not_found', 'conflict', 'internal', 'scheduler', 'sequence']);

test('catalogue is complete: unique SEL_ codes, a status, a kind and a description each, frozen', () => {
  assert.ok(Object.isFrozen(ERROR_CATALOGUE));
  const codes = Object.keys(ERROR_CATALOGUE);
  assert.equal(new Set(codes).size, codes.length);
  for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
    assert.match(code, /^SEL_[A-Z_]+$/);
    assert.ok(Number.isInteger(entry.status) && entry.status >= 400 && entry.status < 600, code);
    assert.ok(KINDS.has(entry.kind), `${code} kind ${entry.kind}`);
    assert.ok(entry.description.length > 0, `${code} is documented`);
  }
  for (const code of ['SEL_BAD_REQUEST', 'SEL_NOT_READY', 'SEL_SHUTTING_DOWN', 'SEL_WORKER_NOT_FOUND',
    'SEL_RESERVATION_NOT_FOUND', 'SEL_PENDING_NOT_FOUND', 'SEL_SCHEDULABLE_WORKER_NOT_FOUND', 'SEL_DUPLICATE_SELECTION',
    'SEL_QUEUE_REJECTED', 'SEL_ALL_FILTERED', 'SEL_POLICY_INTERNAL', 'SEL_PINNED_NOT_ALLOWED', 'SEL_REPLICA_SYNC_DISABLED',
    'SEL_PEER_NOT_FOUND', 'SEL_INVALID_ENDPOINT', 'SEL_INTERNAL', 'SEL_OVERLOADED', 'SEL_CONFLICT']) {
    assert.ok(code in ERROR_CATALOGUE, code);
  }
});

test('status per code follows Dynamo `lib/kv-router/src/services/selection/error.rs` (newest error.rs)', () => {
  const want: Partial<Record<ErrorCode, [number, string]>> = {
    SEL_BAD_REQUEST: [400, 'bad_request'], SEL_NOT_READY: [503, 'not_ready'], SEL_SHUTTING_DOWN: [503, 'not_ready'],
    SEL_WORKER_NOT_FOUND: [404, 'not_found'], SEL_RESERVATION_NOT_FOUND: [404, 'not_found'],
    SEL_PENDING_NOT_FOUND: [404, 'not_found'], SEL_SCHEDULABLE_WORKER_NOT_FOUND: [404, 'not_found'],
    SEL_DUPLICATE_SELECTION: [409, 'conflict'], SEL_CONFLICT: [409, 'conflict'], SEL_INTERNAL: [500, 'internal'],
    SEL_QUEUE_REJECTED: [429, 'scheduler'], SEL_OVERLOADED: [429, 'scheduler'],
    SEL_ALL_FILTERED: [503, 'scheduler'], SEL_NO_ENDPOINTS: [503, 'scheduler'], SEL_SUBSCRIBER_SHUTDOWN: [503, 'scheduler'],
    SEL_PINNED_NOT_ALLOWED: [400, 'scheduler'], SEL_POLICY_INTERNAL: [500, 'scheduler'],
    SEL_CLASSIFIER_FAILED: [500, 'scheduler'], SEL_INDEXER_OFFLINE: [503, 'not_ready'],
    SEL_SEQUENCE_DUPLICATE_REQUEST: [409, 'sequence'],
    SEL_REPLICA_SYNC_DISABLED: [409, 'conflict'], SEL_PEER_NOT_FOUND: [404, 'not_found'],
    SEL_INVALID_ENDPOINT: [400, 'bad_request'], SEL_PEER_MANAGER_UNAVAILABLE: [503, 'not_ready'],
    SEL_ROUTE_NOT_FOUND: [404, 'not_found'], SEL_METHOD_NOT_ALLOWED: [405, 'bad_request'],
    SEL_BODY_TOO_LARGE: [413, 'bad_request'], SEL_UNSUPPORTED_MEDIA_TYPE: [415, 'bad_request'],
    SEL_UNPROCESSABLE: [422, 'bad_request'],
  };
  for (const [code, [status, kind]] of Object.entries(want) as [ErrorCode, [number, string]][]) {
    const err = new SelectionError(code, 'x');
    assert.equal(err.status, status, code);
    assert.equal(err.kind, kind, code);
  }
});

test('partition display is partition "model/group"', () => {
  assert.equal(partitionLabel('model', 'default'), 'partition "model/default"');
});

test('every factory produces the spec text', () => {
  const cases: [SelectionError, ErrorCode, string][] = [
    [E.shuttingDown(), 'SEL_SHUTTING_DOWN', 'selection service is shutting down'],
    [E.workerNotFound(18446744073709551615n), 'SEL_WORKER_NOT_FOUND', 'worker 18446744073709551615 not found'],
    [E.reservationNotFound('r-1'), 'SEL_RESERVATION_NOT_FOUND', 'reservation r-1 not found'],
    [E.reservationNotFound('r-1', { kind: 'freed', byPeer: false }), 'SEL_RESERVATION_NOT_FOUND', 'reservation r-1 was already freed'],
    [E.reservationNotFound('r-1', { kind: 'freed', byPeer: true }), 'SEL_RESERVATION_NOT_FOUND',
      'reservation r-1 was already freed (by a replica peer)'],
    [E.reservationNotFound('r-1', { kind: 'expired', afterSecs: 300 }), 'SEL_RESERVATION_NOT_FOUND',
      'reservation r-1 expired after 300 s without being freed'],
    [E.reservationNotFound('r-1', { kind: 'worker', workerId: 7n, dpRank: 0, change: 'removed' }), 'SEL_RESERVATION_NOT_FOUND',
      'reservation r-1 was freed when its worker 7 was removed'],
    [E.reservationNotFound('r-1', { kind: 'worker', workerId: 7n, dpRank: 2, change: 'rank' }), 'SEL_RESERVATION_NOT_FOUND',
      'reservation r-1 was freed when dp_rank 2 of its worker 7 was removed'],
    [E.reservationNotFound('r-1', { kind: 'worker', workerId: 7n, dpRank: 0, change: 'left' }), 'SEL_RESERVATION_NOT_FOUND',
      'reservation r-1 was freed when its worker 7 left the partition (re-registered)'],
    [E.duplicateSelection('s-1'), 'SEL_DUPLICATE_SELECTION', 'selection s-1 is already reserved or being reserved'],
    [E.pendingNotFound('s-1', 'model', 'default'), 'SEL_PENDING_NOT_FOUND',
      'no pending selection s-1 for partition "model/default" (expired, already used, or never selected)'],
    [E.schedulableWorkerNotFound(7n, 'model', 'default'), 'SEL_SCHEDULABLE_WORKER_NOT_FOUND',
      'schedulable worker 7 not found for partition "model/default"'],
    [E.schedulableWorkerNotFound(7n, 'model', 'default', 3), 'SEL_SCHEDULABLE_WORKER_NOT_FOUND',
      'schedulable worker 7 (dp_rank 3) not found for partition "model/default"'],
    [E.pinnedNotAllowed(5n), 'SEL_PINNED_NOT_ALLOWED', 'pinned worker 5 is not in allowed worker set'],
    [E.decayFractionOutOfRange(), 'SEL_BAD_REQUEST', 'decay_fraction must be between 0.0 and 1.0'],
    [E.replicaSyncDisabled(), 'SEL_REPLICA_SYNC_DISABLED', 'replica sync is disabled'],
    [E.peerNotFound(), 'SEL_PEER_NOT_FOUND', 'peer not found'],
    [E.peerManagerUnavailable(), 'SEL_PEER_MANAGER_UNAVAILABLE', 'replica peer manager is unavailable'],
    [E.invalidZmqEndpoint('invalid', 'missing scheme'), 'SEL_INVALID_ENDPOINT', 'invalid ZMQ endpoint `invalid`: missing scheme'],
    [E.blockHashesRequired(), 'SEL_BAD_REQUEST', 'block_hashes is required without token_ids'],
    [E.sequenceHashesRequired(), 'SEL_BAD_REQUEST', 'sequence_hashes is required without token_ids'],
    [E.islTokensRequired(), 'SEL_BAD_REQUEST', 'isl_tokens is required without token_ids'],
    [E.islTokensZero(), 'SEL_BAD_REQUEST', 'isl_tokens must be greater than 0'],
    [E.hashLengthMismatch(2, 3), 'SEL_BAD_REQUEST', 'block_hashes length 2 must match sequence_hashes length 3'],
    [E.effectivePrefillExceedsIsl(9, 4), 'SEL_BAD_REQUEST', 'effective_prefill_tokens 9 must not exceed isl_tokens 4'],
    [E.routeNotFound(), 'SEL_ROUTE_NOT_FOUND', 'route not found'],
    [E.methodNotAllowed(), 'SEL_METHOD_NOT_ALLOWED', 'method not allowed'],
    [E.classifierFailed(), 'SEL_CLASSIFIER_FAILED', 'request classifier failed'],
  ];
  for (const [err, code, message] of cases) {
    assert.ok(err instanceof SelectionError && err instanceof Error);
    assert.equal(err.code, code, message);
    assert.equal(err.message, message);
    assert.deepEqual(errorBody(err), { error: message });
  }
  assert.match(E.policyNonFiniteCost(1n, 0, NaN).message, /non-finite/);
  assert.match(E.policyBadRow(5, 2).message, /candidate row/);
  assert.match(E.noLongerSchedulable(1n, 0, 'm', 'g').message, /no longer schedulable/);
});

/** A lookup of `model/default` with nothing registered; `over` changes what the catalog holds. */
const lookup = (over: Partial<E.PartitionLookup> = {}): E.PartitionLookup => ({
  model: 'model', group: 'default', modelAssumed: false, groupAssumed: true, anySchedulable: false,
  here: { count: 0, sample: [] }, otherGroups: [], knownModels: [], ...over,
});

test('the 503 of a partition without schedulable workers says what was looked up and what exists', () => {
  const cases: [E.PartitionLookup, string][] = [
    [lookup(), 'no schedulable workers are available: no worker is registered (POST /workers registers one)'],
    [lookup({ model: 'default', modelAssumed: true, anySchedulable: true, knownModels: ['a', 'b', 'c', 'd', 'e', 'f', 'g'],
      lookalike: 'modelName' }),
    'no schedulable workers for partition "default/default": model_name was not given, so "default" was assumed '
      + '(the body has "modelName": the field is model_name); no worker is registered for model "default"; '
      + 'known models: "a", "b", "c", "d", "e" and 2 more'],
    [lookup({ anySchedulable: true, otherGroups: ['g1', 'g2'], knownModels: ['model'] }),
      'no schedulable workers for partition "model/default": routing_group was not given, so "default" was assumed; '
      + 'model "model" has no worker in routing group "default", only in "g1", "g2"'],
    [lookup({ groupAssumed: false, knownModels: ['model'], here: { count: 5, sample: [
      { workerId: 1n, lifecycle: 'incomplete', reasons: ['endpoint is required', 'block_size is required'] },
      { workerId: 2n, lifecycle: 'incomplete', reasons: ['endpoint is required'] },
      { workerId: 3n, lifecycle: 'incomplete', reasons: [] }] } }),
    'no schedulable workers are available: model "model" in routing group "default" has 5 worker(s) and none is schedulable: '
      + 'worker 1 is incomplete (endpoint is required; block_size is required), worker 2 is incomplete (endpoint is required), '
      + 'worker 3 is incomplete and 2 more'],
    [lookup({ groupAssumed: false, anySchedulable: true, knownModels: [`${'m'.repeat(100)}`] }),
      `no schedulable workers for partition "model/default": no worker is registered for model "model"; known models: "${'m'.repeat(63)}…"`],
  ];
  for (const [l, message] of cases) {
    const err = E.noSchedulableWorkersFor(l);
    assert.deepEqual([err.code, err.status, err.message], ['SEL_NOT_READY', 503, message]);
  }
});

test('queue rejection: 429 with the structured details', () => {
  const err = E.queueRejected({ policy_class: 'latency', limit_kind: 'requests', current: 0, limit: 0 });
  assert.equal(err.status, 429);
  assert.equal(err.message, 'router policy class "latency" queue requests limit reached (current=0, limit=0)');
  assert.deepEqual(errorBody(err), {
    error: err.message, details: { policy_class: 'latency', limit_kind: 'requests', current: 0, limit: 0 },
  });
  assert.ok(Object.isFrozen(err.details));
});

test('toSelectionError keeps selection errors and maps anything else to internal 500', () => {
  const known = E.peerNotFound();
  assert.equal(toSelectionError(known), known);
  const boom = new Error('boom');
  const mapped = toSelectionError(boom);
  assert.equal(mapped.code, 'SEL_INTERNAL');
  assert.equal(mapped.status, 500);
  assert.equal(mapped.kind, 'internal');
  assert.equal(mapped.message, 'boom');
  assert.equal(mapped.cause, boom);
  assert.equal(toSelectionError('text').message, 'text');
  assert.equal(toSelectionError(undefined).message, 'undefined');
  assert.throws(() => new SelectionError('SEL_NOPE' as ErrorCode, 'x'), TypeError);
});
