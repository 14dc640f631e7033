import base, { appImports } from '../../eslint.config.mjs';

// The registry makes the embedded base model and stores PEFT adapters with the engine's
// tensor-free entry point (@trainyard/engine/files); this rule keeps TensorFlow.js (the
// engine's main entry, which registers its kernels at load) out of it.
export default [
  ...base,
  appImports([{ name: '@trainyard/engine', message: 'Import @trainyard/engine/files: the registry must not load TensorFlow.js.' }]),
];
