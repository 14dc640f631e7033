import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelConfig } from '../../../libs/engine/src/config';
import { makeModel, Preset } from '../../../libs/engine/src/maker/make-model';

/** A variant of a preset's shape: `name` tells it apart on disk. */
export interface BenchVariant {
  name: string;
  overrides: Partial<ModelConfig>;
}

/**
 * The directory of a `preset`-shaped model (or its `variant`) with random weights (the model
 * maker's, seed 0) that the host-side benches share, made on first use. It lives under tmp/,
 * not var/models/, where `npm start` would serve it as a base model.
 */
export function benchModel(preset: Preset, variant?: BenchVariant): string {
  const dir = path.join('tmp', 'bench-models', variant ? `${preset}-${variant.name}` : preset);
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset, out: dir, seed: 0, overrides: variant?.overrides });
  return dir;
}
