import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeModel } from '../src/maker/make-model';
import { tempDir } from './helpers';

describe('makeModel', () => {
  it('writes a complete Hugging Face model directory', () => {
    const out = tempDir('maker');
    const made = makeModel({ preset: 'tiny', out, seed: 3 });
    for (const f of ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'model.safetensors']) {
      expect(fs.existsSync(path.join(out, f))).toBe(true);
    }
    const tok = JSON.parse(fs.readFileSync(path.join(out, 'tokenizer.json'), 'utf8'));
    expect(tok.model.type).toBe('BPE');
    expect(tok.model.merges.length).toBeGreaterThan(200);
    expect(Object.keys(tok.model.vocab)).toHaveLength(made.config.vocabSize);
    const cfg = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    expect(cfg).toMatchObject({ architectures: ['LlamaForCausalLM'], hidden_size: 64, num_key_value_heads: 2, eos_token_id: 2 });
  });

  it('is deterministic in the seed', () => {
    const bytes = (seed: number) => {
      const out = tempDir('seed');
      makeModel({ preset: 'tiny', out, seed });
      return fs.readFileSync(path.join(out, 'model.safetensors'));
    };
    expect(bytes(1).equals(bytes(1))).toBe(true);
    expect(bytes(1).equals(bytes(2))).toBe(false);
  });

  it('applies shape overrides', () => {
    const out = tempDir('shape');
    makeModel({ preset: 'tiny', out, overrides: { modelType: 'qwen2', numLayers: 3, vocabSize: 300 } });
    const cfg = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    expect(cfg).toMatchObject({ architectures: ['Qwen2ForCausalLM'], num_hidden_layers: 3, vocab_size: 300 });
  });
});
