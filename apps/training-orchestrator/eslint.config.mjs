import base, { appImports } from '../../eslint.config.mjs';

// The orchestrator validates training requests with the engine's pure wire entry point
// (@trainyard/engine/wire: experimental_config, trajectory groups, SFT JSONL), so it is not
// tagged engine:none; this rule keeps TensorFlow.js (the engine's main entry) out of it.
export default [
  ...base,
  appImports([{ name: '@trainyard/engine', message: 'Import @trainyard/engine/wire: the orchestrator must not load TensorFlow.js.' }]),
];
