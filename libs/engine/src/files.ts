/**
 * The engine's tensor-free file formats: a model directory's config, the model maker (tiny
 * models in the layout users download), and PEFT LoRA adapter files. Services that store or
 * make these files without running a model (the model registry, which also tells which
 * installed models the engine can load) import this entry point,
 * `@trainyard/engine/files`, never `@trainyard/engine` itself, which loads TensorFlow.js and
 * registers its kernels.
 */
export type { ModelConfig } from './config';
export { parseModelConfig } from './config';
export { ModelLoadError } from './errors';
export { makeModel } from './maker/make-model';
export type { MadeModel, MakeModelOptions } from './maker/make-model';
export {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  DEFAULT_LORA_SPEC,
  initLoraWeights,
  readModelConfig,
  readPeftAdapter,
  writePeftAdapter,
} from './lora/peft';
export type { AdapterTensor, AdapterTensors, LoraSpec, PeftAdapter } from './lora/peft';
