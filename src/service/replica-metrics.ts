/**
 * The replica mesh's Prometheus families, read at scrape time from {@link ReplicaMetrics} (no
 * series without replica sync): messages by outcome and drops by reason, anti-entropy digests,
 * repairs and bytes, tombstones, each peer's connection, and the start-up mesh state `/ready`
 * waits for. docs/operating.md lists them with what to alert on.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { ReplicaMetrics } from './replica-sync.js';

/** Registers the families on `registers`; `read` is null while replica sync is off. */
export function registerReplicaMetrics(registers: Registry[], read: () => ReplicaMetrics | null): void {
  type Fill = (m: ReplicaMetrics, put: (labels: Record<string, string>, v: number) => void) => void;
  const counter = (name: string, help: string, labelNames: string[], fill: Fill): void => void new Counter({
    name, help, labelNames, registers,
    collect() { this.reset(); const m = read(); if (m !== null) fill(m, (l, v) => this.inc(l, v)); },
  });
  const gauge = (name: string, help: string, labelNames: string[], fill: Fill): void => void new Gauge({
    name, help, labelNames, registers,
    collect() { this.reset(); const m = read(); if (m !== null) fill(m, (l, v) => this.set(l, v)); },
  });
  counter('select_service_replica_messages_total',
    'Replica-sync messages by direction and outcome (received dropped: refused on receipt, by reason in select_service_replica_dropped_messages_total; lost: published by a peer and never received)',
    ['direction', 'outcome'], ({ stats: s }, put) => {
      put({ direction: 'sent', outcome: 'ok' }, s.sent);
      put({ direction: 'sent', outcome: 'dropped' }, s.sendDropped);
      put({ direction: 'received', outcome: 'ok' }, s.applied);
      put({ direction: 'received', outcome: 'dropped' }, s.malformed + s.ownDropped + s.receiveDropped + s.rejected);
      put({ direction: 'received', outcome: 'lost' }, s.lost);
    });
  counter('select_service_replica_dropped_messages_total',
    'Replica-sync messages dropped, by direction and reason (sent: send_queue_full, send_error; received: malformed, own, receive_queue_full, lost, tombstoned, apply_error and the receive rules)',
    ['direction', 'reason'], (m, put) => { for (const d of m.drops) put({ direction: d.direction, reason: d.reason }, d.count); });
  counter('select_service_replica_digests_total',
    'Anti-entropy digests: sent by this replica, and peers\' digests that matched what this replica holds or differed (then repaired)',
    ['outcome'], ({ repair: r }, put) => {
      put({ outcome: 'sent' }, r.digestsSent);
      put({ outcome: 'match' }, r.digestMatches);
      put({ outcome: 'mismatch' }, r.digestMismatches);
    });
  counter('select_service_replica_repairs_total',
    'Anti-entropy repairs: bookings added from a peer, dropped because their owner no longer holds them, frees sent again to a peer that missed them, prefill completions applied',
    ['action'], ({ repair: r }, put) => {
      put({ action: 'added' }, r.added);
      put({ action: 'dropped' }, r.dropped);
      put({ action: 'free_resent' }, r.freesResent);
      put({ action: 'prefill_completed' }, r.prefillsCompleted);
    });
  counter('select_service_replica_anti_entropy_bytes_total', 'Bytes of anti-entropy messages (digests and repairs) by direction',
    ['direction'], ({ repair: r }, put) => { put({ direction: 'sent' }, r.bytesSent); put({ direction: 'received' }, r.bytesReceived); });
  gauge('select_service_replica_tombstones', 'Freed booking ids remembered (a free that overtakes its booking, or that a peer missed, still frees it)',
    [], ({ tombstones: t }, put) => put({}, t.size));
  counter('select_service_replica_tombstones_evicted_total',
    'Tombstones dropped by --replica-sync-max-tombstones (or the byte budget) before their age: a free missed for longer may no longer be repaired',
    [], ({ tombstones: t }, put) => put({}, t.evictions));
  gauge('select_service_replica_peer_up', 'Whether the peer endpoint is connected and its digests arrive (1) or not (0)',
    ['endpoint'], (m, put) => { for (const p of m.peers) put({ endpoint: p.endpoint }, p.up ? 1 : 0); });
  gauge('select_service_replica_mesh_ready',
    'After start-up: 1 once a worker was registered and every peer was connected both ways and the first digest exchange since done (or the wait timed out), 0 while /ready waits for it',
    [], ({ mesh }, put) => put({}, mesh.meshed ? 1 : 0));
  gauge('select_service_replica_mesh_timed_out',
    '1 when /ready stopped waiting for the mesh after --replica-sync-ready-timeout-secs without it forming (a warning: some peer was missing)',
    [], ({ mesh }, put) => put({}, mesh.timedOut ? 1 : 0));
}
