import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Qwen3ForCausalLM's forward pass in plain JS loops and float64, written from the published
 * architecture (transformers' modeling_qwen3.py) and sharing nothing with the engine, not even
 * its safetensors reader: the yardstick for the engine's qwen3. Per layer:
 *
 *   h = x + o_proj(attention(rope(q_norm(q_proj(rms(x)))), rope(k_norm(k_proj(rms(x)))), v_proj(rms(x))))
 *   y = h + down_proj(silu(gate_proj(rms(h))) * up_proj(rms(h)))
 *
 * where q_norm and k_norm are RMSNorms over each head's head_dim features (weights [head_dim]),
 * applied before RoPE; head_dim comes from config.json (not hidden / heads); attention is
 * causal grouped-query attention scaled by head_dim^-0.5; biases only with attention_bias;
 * lm_head is the embedding when tie_word_embeddings. Returns the logits of every position.
 */
export function qwen3ReferenceForward(dir: string, tokens: number[]): Float64Array[] {
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  if (cfg.model_type !== 'qwen3') throw new Error(`not a qwen3 config: ${cfg.model_type}`);
  const weights = readF32Safetensors(path.join(dir, 'model.safetensors'));
  const w = (name: string) => {
    const t = weights.get(name);
    if (!t) throw new Error(`missing tensor ${name}`);
    return t;
  };
  const C: number = cfg.hidden_size;
  const H: number = cfg.num_attention_heads;
  const KV: number = cfg.num_key_value_heads;
  const D: number = cfg.head_dim;
  const I: number = cfg.intermediate_size;
  const eps: number = cfg.rms_norm_eps;
  const biased: boolean = cfg.attention_bias === true;

  const linear = (W: Float32Array, x: ArrayLike<number>, out: number, bias?: Float32Array) => {
    const n = x.length;
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = bias ? bias[o] : 0;
      for (let i = 0; i < n; i++) s += W[o * n + i] * x[i];
      y[o] = s;
    }
    return y;
  };
  /** RMSNorm of each consecutive group of `size` features, with one weight vector of `size`. */
  const rmsNorm = (x: Float64Array, g: Float32Array, size = x.length) => {
    const y = new Float64Array(x.length);
    for (let start = 0; start < x.length; start += size) {
      let ms = 0;
      for (let i = 0; i < size; i++) ms += x[start + i] * x[start + i];
      const r = 1 / Math.sqrt(ms / size + eps);
      for (let i = 0; i < size; i++) y[start + i] = x[start + i] * r * g[i];
    }
    return y;
  };
  const invFreq = Array.from({ length: D / 2 }, (_, i) => 1 / Math.pow(cfg.rope_theta, (2 * i) / D));
  /** rotate_half RoPE of each head: x * cos + [-x2, x1] * sin. */
  const rope = (x: Float64Array, pos: number) => {
    const y = new Float64Array(x.length);
    for (let start = 0; start < x.length; start += D) {
      for (let i = 0; i < D / 2; i++) {
        const [c, s] = [Math.cos(pos * invFreq[i]), Math.sin(pos * invFreq[i])];
        const [x1, x2] = [x[start + i], x[start + i + D / 2]];
        y[start + i] = x1 * c - x2 * s;
        y[start + i + D / 2] = x2 * c + x1 * s;
      }
    }
    return y;
  };

  const E = w('model.embed_tokens.weight');
  let xs = tokens.map((t) => Float64Array.from(E.subarray(t * C, (t + 1) * C)));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const proj = (name: string, x: Float64Array, out: number) => linear(w(`${p}.${name}.weight`), x, out, biased ? w(`${p}.${name}.bias`) : undefined);
    const normed = xs.map((x) => rmsNorm(x, w(`${p}.input_layernorm.weight`)));
    const qs = normed.map((h, t) => rope(rmsNorm(proj('self_attn.q_proj', h, H * D), w(`${p}.self_attn.q_norm.weight`), D), t));
    const ks = normed.map((h, t) => rope(rmsNorm(proj('self_attn.k_proj', h, KV * D), w(`${p}.self_attn.k_norm.weight`), D), t));
    const vs = normed.map((h) => proj('self_attn.v_proj', h, KV * D));
    xs = xs.map((x, t) => {
      const heads = new Float64Array(H * D);
      for (let h = 0; h < H; h++) {
        const kv = Math.floor(h / (H / KV));
        const scores: number[] = [];
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let i = 0; i < D; i++) s += qs[t][h * D + i] * ks[j][kv * D + i];
          scores.push(s / Math.sqrt(D));
        }
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++) for (let i = 0; i < D; i++) heads[h * D + i] += (e[j] / z) * vs[j][kv * D + i];
      }
      const o = proj('self_attn.o_proj', heads, C);
      const h1 = x.map((v, i) => v + o[i]);
      const n2 = rmsNorm(h1, w(`${p}.post_attention_layernorm.weight`));
      const gate = linear(w(`${p}.mlp.gate_proj.weight`), n2, I);
      const up = linear(w(`${p}.mlp.up_proj.weight`), n2, I);
      const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
      const down = linear(w(`${p}.mlp.down_proj.weight`), act, C);
      return h1.map((v, i) => v + down[i]);
    });
  }
  const head = cfg.tie_word_embeddings ? E : w('lm_head.weight');
  return xs.map((x) => linear(head, rmsNorm(x, w('model.norm.weight')), cfg.vocab_size));
}

/** log softmax of one row of logits, in float64. */
export function logSoftmax(logits: ArrayLike<number>): Float64Array {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i] - max);
  const lse = max + Math.log(z);
  return Float64Array.from(logits, (v) => v - lse);
}

/** Every tensor of a single-file F32 safetensors checkpoint: 8-byte header length, JSON header, raw little-endian data. */
function readF32Safetensors(file: string): Map<string, Float32Array> {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, { dtype: string; data_offsets: [number, number] }>;
  const tensors = new Map<string, Float32Array>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    if (entry.dtype !== 'F32') throw new Error(`${name}: the reference reads F32 only, not ${entry.dtype}`);
    const [begin, end] = entry.data_offsets;
    const data = new Float32Array((end - begin) / 4);
    for (let i = 0; i < data.length; i++) data[i] = bytes.readFloatLE(8 + headerLength + begin + 4 * i);
    tensors.set(name, data);
  }
  return tensors;
}
