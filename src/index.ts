/**
 * select-service, Node entry. The core (`./core/index.js`) is isomorphic and also usable alone.
 */
export * from './core/index.js';
// The HTTP API as a Fastify plugin, for embedding in another server (api §2).
export { buildApp, createServer, selectionApi } from './http/app.js';
export type { SelectionApiOptions, ServerOptions } from './http/app.js';
export { WorkersFileDiscovery } from './service/discovery.js';
