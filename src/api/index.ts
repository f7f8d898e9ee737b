// The API layer in one import: models, validation, loading, snapshots, controller configuration.
export * from './common.js';
export * from './controller-config.js';
export * from './core.js';
export * from './data-plane-proxy.js';
export * from './gateway.js';
export * from './gateway-api-bundle.js';
export * from './gateway-class.js';
export * from './grpc-route.js';
export * from './http-route.js';
export * from './kinds.js';
export * from './load.js';
export * from './reference-grant.js';
export * from './route-kinds.js';
export * from './snapshot.js';
export * from './validate.js';
