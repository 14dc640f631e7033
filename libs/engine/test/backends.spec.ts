import * as tf from '@tensorflow/tfjs-core';
import { selectBackend } from '../src/backend';
import { loadModel } from '../src/loader';
import { makeTiny, maxAbsDiff, rowsOf } from './helpers';

describe('backends', () => {
  it('reports the backend it chose and skips what cannot load', async () => {
    const info = await selectBackend('auto');
    expect(['tensorflow', 'webgpu', 'wasm', 'cpu']).toContain(info.name);
    expect(tf.getBackend()).toBe(info.name);
    if (info.name !== 'tensorflow') expect(info.notes.join(' ')).toMatch(/tensorflow/);
  });

  it('gives the same logits and cached decoding on wasm and cpu', async () => {
    const dir = makeTiny('backends', { overrides: { modelType: 'qwen2' } });
    const tokens = [1, 300, 301, 20, 21, 22, 2];
    const run = async (name: 'wasm' | 'cpu') => {
      await selectBackend(name);
      const lm = await loadModel(dir);
      const full = lm.model.forward([tokens]);
      const cache = lm.model.newCache();
      cache.addEmptyRow();
      lm.model.forward([tokens.slice(0, 4)], { cache }).dispose();
      const step = lm.model.forward([[tokens[4]]], { cache });
      const out = { full: rowsOf(full), step: rowsOf(step)[0] };
      tf.dispose([full, step]);
      cache.dispose();
      lm.dispose();
      return out;
    };
    const wasm = await run('wasm');
    const cpu = await run('cpu');
    wasm.full.forEach((row, t) => expect(maxAbsDiff(row, cpu.full[t])).toBeLessThan(1e-4));
    expect(maxAbsDiff(wasm.step, cpu.step)).toBeLessThan(1e-4);
    expect(maxAbsDiff(wasm.step, wasm.full[4])).toBeLessThan(1e-4);
  });
});
