/**
 * select-service, Node entry. The core (`./core/index.js`) is isomorphic and also usable alone.
 */
export * from './core/index.js';
