import * as fs from 'node:fs';
import * as path from 'node:path';
import { ModelLoadError } from '../src/errors';
import { loadModel, parameterCount, wasmMemoryExceeded } from '../src/loader';
import { PRESETS } from '../src/maker/make-model';
import { writeSafetensors, SafetensorsFile } from '../src/safetensors';
import { makeTiny, maxAbsDiff, rowsOf, tempDir, useBackend } from './helpers';

const TOKENS = [1, 300, 20, 301, 7, 2];

async function logitsOf(dir: string): Promise<Float32Array[]> {
  const lm = await loadModel(dir);
  const t = lm.model.forward([TOKENS]);
  const rows = rowsOf(t);
  t.dispose();
  lm.dispose();
  return rows;
}

function copyDir(from: string, prefix: string): string {
  const to = tempDir(prefix);
  for (const f of fs.readdirSync(from)) fs.copyFileSync(path.join(from, f), path.join(to, f));
  return to;
}

describe('loading a model directory', () => {
  let dir: string;

  beforeAll(async () => {
    await useBackend('wasm');
    dir = makeTiny('loader');
  });

  it('reads config, generation config, tokenizer and chat template', async () => {
    const lm = await loadModel(dir);
    expect(lm.config).toMatchObject({ modelType: 'llama', numLayers: 2, hiddenSize: 64, tieWordEmbeddings: false });
    expect(lm.eosTokenIds).toEqual([2]);
    expect(lm.generationConfig.temperature).toBe(1);
    expect(lm.chatTemplate?.supportsTools).toBe(true);
    expect(lm.tokenizer.vocabSize).toBe(512);
    lm.dispose();
  });

  it('reproduces the logits after writing the weights back and re-loading', async () => {
    const original = await logitsOf(dir);
    const copy = copyDir(dir, 'rewrite');
    const st = SafetensorsFile.open(path.join(dir, 'model.safetensors'));
    const tensors = Object.fromEntries([...st.tensors.keys()].map((n) => [n, st.read(n)]));
    st.close();
    writeSafetensors(path.join(copy, 'model.safetensors'), tensors);
    expect(maxAbsDiff((await logitsOf(copy)).flatMap((r) => [...r]), original.flatMap((r) => [...r]))).toBe(0);
  });

  it.each([
    ['F16', 1, 2e-2],
    ['BF16', 3, 1.5e-1],
  ] as const)('loads %s weights from %i shard(s) close to the f32 model', async (dtype, shards, tolerance) => {
    const original = await logitsOf(dir);
    const other = makeTiny(`dtype-${dtype}`, { dtype, shards });
    if (shards > 1) expect(fs.existsSync(path.join(other, 'model.safetensors.index.json'))).toBe(true);
    const got = await logitsOf(other);
    const diff = maxAbsDiff(got.flatMap((r) => [...r]), original.flatMap((r) => [...r]));
    expect(diff).toBeGreaterThan(0);
    expect(diff).toBeLessThan(tolerance);
  });

  it('names the missing file', async () => {
    const copy = copyDir(dir, 'missing');
    fs.rmSync(path.join(copy, 'tokenizer.json'));
    await expect(loadModel(copy)).rejects.toThrow(/tokenizer\.json: missing file/);
    fs.rmSync(path.join(copy, 'model.safetensors'));
    fs.copyFileSync(path.join(dir, 'tokenizer.json'), path.join(copy, 'tokenizer.json'));
    await expect(loadModel(copy)).rejects.toThrow(/model\.safetensors/);
  });

  it('rejects an unsupported architecture naming config.json', async () => {
    const copy = copyDir(dir, 'arch');
    const file = path.join(copy, 'config.json');
    const config = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.writeFileSync(file, JSON.stringify({ ...config, architectures: ['MistralForCausalLM'], model_type: 'mistral' }));
    await expect(loadModel(copy)).rejects.toThrow(/config\.json: unsupported architecture \["MistralForCausalLM"\]/);
  });

  it('names the file and tensor of a wrong shape or a missing tensor', async () => {
    const copy = copyDir(dir, 'shape');
    const st = SafetensorsFile.open(path.join(dir, 'model.safetensors'));
    const tensors = Object.fromEntries([...st.tensors.keys()].map((n) => [n, st.read(n)]));
    st.close();
    const name = 'model.layers.1.mlp.up_proj.weight';
    const wrong = { ...tensors, [name]: { shape: [159, 64], data: tensors[name].data.slice(0, 159 * 64) } };
    writeSafetensors(path.join(copy, 'model.safetensors'), wrong);
    await expect(loadModel(copy)).rejects.toThrow(
      /model\.safetensors \(tensor model\.layers\.1\.mlp\.up_proj\.weight\): shape \[159,64\] does not match the config's \[160,64\]/,
    );
    const missing = { ...tensors };
    delete missing['model.norm.weight'];
    writeSafetensors(path.join(copy, 'model.safetensors'), missing);
    await expect(loadModel(copy)).rejects.toThrow(/tensor model\.norm\.weight\): tensor missing/);
  });

  it("counts a model's parameters as Hugging Face does (SmolLM2-135M: 134,515,008)", () => {
    expect(parameterCount(PRESETS['smollm2-135m'])).toBe(134_515_008);
  });

  it("tells a wasm memory that cannot grow as the limit a model met, with what makes it fit, and nothing else", () => {
    const config = PRESETS['smollm2-135m'];
    const refusal = wasmMemoryExceeded(new RangeError('offset is out of bounds'), config, '/models/big', { inferenceOnly: true, weights: 'q8' });
    expect(refusal).toBeInstanceOf(ModelLoadError);
    expect(refusal?.file).toBe('/models/big/config.json');
    expect(refusal?.reason).toMatch(/4 GiB .*0\.13B parameters as 8-bit weights .*offset is out of bounds.*MATMUL_THREADS/);
    expect(wasmMemoryExceeded(new TypeError('not memory'), config, '/models/big', {})).toBeNull();
  });

  it('refuses to train on wasm a model whose f32 weights pass what its memory holds, before reading a weight, and to serve it on one memory as f32', async () => {
    // Llama 3.2 1B's shape in config.json over the tiny model's files: refused before any tensor is read.
    const big = copyDir(dir, 'loader-big');
    const config = JSON.parse(fs.readFileSync(path.join(big, 'config.json'), 'utf8')) as Record<string, unknown>;
    Object.assign(config, { hidden_size: 2048, intermediate_size: 8192, num_hidden_layers: 16, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 64, vocab_size: 128256, tie_word_embeddings: true });
    fs.writeFileSync(path.join(big, 'config.json'), JSON.stringify(config));
    const refusal = await loadModel(big).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(ModelLoadError);
    expect((refusal as ModelLoadError).reason).toMatch(/too large to train on the wasm backend: its 1\.24B parameters take 4\.6 GiB as f32 weights.*GPU worker/);
    // Served on one memory as stored (f32, 4 bytes a parameter) it does not fit either; as q8 it
    // gets as far as its weights (whose shapes are the tiny model's).
    await expect(loadModel(big, { inferenceOnly: true })).rejects.toThrow(/1\.24B parameters take at least 4\.6 GiB as 32-bit weights.*WEIGHTS=q8/);
    await expect(loadModel(big, { inferenceOnly: true, weights: 'q8' })).rejects.toThrow(/shape|tensor/i);
  });

  it('refuses to serve on one wasm memory a model whose 16-bit weights pass what it holds, and says what makes it fit', async () => {
    // Qwen3-1.7B's shape over a bf16 checkpoint: 3.2 GiB does not fit one memory; as q8 (1.7 GiB) or with matmul threads it may.
    const big = copyDir(makeTiny('loader-bf16', { dtype: 'BF16' }), 'loader-serve');
    const config = JSON.parse(fs.readFileSync(path.join(big, 'config.json'), 'utf8')) as Record<string, unknown>;
    Object.assign(config, { hidden_size: 2048, intermediate_size: 6144, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, tie_word_embeddings: true });
    fs.writeFileSync(path.join(big, 'config.json'), JSON.stringify(config));
    const refusal = await loadModel(big, { inferenceOnly: true }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(refusal).toBeInstanceOf(ModelLoadError);
    expect((refusal as ModelLoadError).reason).toMatch(/1\.72B parameters take at least 3\.2 GiB as 16-bit weights.*WEIGHTS=q8.*MATMUL_THREADS/);
    await expect(loadModel(big, { inferenceOnly: true, weights: 'q8' })).rejects.toThrow(/shape|tensor/i);
    await expect(loadModel(big, { inferenceOnly: true, matmulThreads: 2 })).rejects.toThrow(/shape|tensor/i);
  });
});
