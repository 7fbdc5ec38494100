/**
 * select-service, Node entry: the isomorphic core (`select-service/core`, re-exported whole) plus
 * the Node service (`SelectionServiceBuilder` -> `SelectionService`: KV-event listeners, replica
 * sync, start-up recovery, timers, shutdown), the HTTP API as a Fastify plugin, and workers-file
 * discovery. The list is explicit (test/unit/api-surface.test.ts keeps it equal to the README).
 *
 * @example
 * ```ts
 * import { SelectionServiceBuilder, parseRouterConfig } from 'select-service';
 * const service = await new SelectionServiceBuilder(parseRouterConfig(process.env)).build();
 * service.upsertWorker({ worker_id: 1, model_name: 'm', endpoint: 'http://w1:8000', block_size: 16, kv_events_endpoint: 'tcp://w1:5557' });
 * const pick = await service.selectAndReserve({ model_name: 'm', token_ids: [1, 2, 3] });
 * service.freeReservation(pick.selection_id!);
 * await service.shutdown();
 * ```
 */
export * from './core/index.js';
export { SelectionService, SelectionServiceBuilder, recoverFromPeers } from './service/service.js';
export type { ServiceOptions } from './service/service.js';
export type { Logger } from './service/logger.js';
export { WorkersFileDiscovery } from './service/discovery.js';
// The HTTP API as a Fastify plugin, for embedding in another server.
export { buildApp, createServer, selectionApi } from './http/app.js';
export type { SelectionApiOptions, ServerOptions } from './http/app.js';
