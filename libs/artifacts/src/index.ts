export * from './artifact-store';
export * from './artifact-store.config';
export * from './artifact-cache';
export * from './bundles';
export * from './disk-artifact-store';
export * from './s3-artifact-store';
export { digestFile } from './files';
