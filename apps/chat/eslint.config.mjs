import base, { appImports } from '../../eslint.config.mjs';

// Chat checks the JSON schemas of a completion (tool parameters, response_format) with the
// engine's pure wire entry point (@trainyard/engine/wire) before queueing it, so it is not
// tagged engine:none; this rule keeps TensorFlow.js (the engine's main entry) out of it.
export default [
  ...base,
  appImports([{ name: '@trainyard/engine', message: 'Import @trainyard/engine/wire: the chat service must not load TensorFlow.js.' }]),
];
