import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeModel, Preset } from '../../../libs/engine/src/maker/make-model';

/**
 * The directory of a `preset`-shaped model with random weights (the model maker's, seed 0) that
 * the host-side benches share, made on first use. It lives under tmp/, not var/models/, where
 * `npm start` would serve it as a base model.
 */
export function benchModel(preset: Preset): string {
  const dir = path.join('tmp', 'bench-models', preset);
  if (!fs.existsSync(path.join(dir, 'model.safetensors'))) makeModel({ preset, out: dir, seed: 0 });
  return dir;
}
