export * from './protocol';
export * from './proto/codec';
