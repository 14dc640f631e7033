import * as fs from 'node:fs';
import * as path from 'node:path';

/**
 * Gemma3ForCausalLM's forward pass in plain JS loops and float64, written from the published
 * architecture (transformers' modeling_gemma3.py and configuration_gemma3.py) and sharing
 * nothing with the engine, not even its safetensors reader: the yardstick for the engine's
 * gemma3_text. Per layer, with every norm Gemma's RMSNorm, x / rms(x) * (1 + w):
 *
 *   h = x + post_attention_layernorm(o_proj(attention(input_layernorm(x))))
 *   y = h + post_feedforward_layernorm(down_proj(gelu_tanh(gate_proj(n)) * up_proj(n))), n = pre_feedforward_layernorm(h)
 *
 * where attention rotates q_norm(q) and k_norm(k) (per head, before RoPE), scores them scaled
 * by query_pre_attn_scalar^-0.5, and is causal; a layer that layer_types names
 * "sliding_attention" (older configs: all but every sliding_window_pattern-th) sees only keys
 * within sliding_window positions of the query (q - k < sliding_window) and rotates with
 * rope_local_base_freq, the others with rope_theta (linearly rescaled by rope_scaling's
 * factor, if any). The embedding is scaled by sqrt(hidden_size) cast to the embedding's dtype
 * (a bf16 checkpoint's 25.25 for 640, not 25.298). lm_head is the embedding when tied.
 * Returns the logits of every position.
 */
export function gemma3ReferenceForward(dir: string, tokens: number[]): Float64Array[] {
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  if (cfg.model_type !== 'gemma3_text') throw new Error(`not a gemma3_text config: ${cfg.model_type}`);
  const { tensors, dtypes } = readSafetensors(path.join(dir, 'model.safetensors'));
  const w = (name: string) => {
    const t = tensors.get(name);
    if (!t) throw new Error(`missing tensor ${name}`);
    return t;
  };
  const C: number = cfg.hidden_size;
  const H: number = cfg.num_attention_heads;
  const KV: number = cfg.num_key_value_heads;
  const D: number = cfg.head_dim;
  const I: number = cfg.intermediate_size;
  const L: number = cfg.num_hidden_layers;
  const eps: number = cfg.rms_norm_eps;
  const window: number = cfg.sliding_window;
  const sliding: boolean[] = cfg.layer_types
    ? cfg.layer_types.map((t: string) => t === 'sliding_attention')
    : Array.from({ length: L }, (_, l) => (l + 1) % (cfg.sliding_window_pattern ?? 6) !== 0);

  const linear = (W: Float32Array, x: ArrayLike<number>, out: number) => {
    const n = x.length;
    const y = new Float64Array(out);
    for (let o = 0; o < out; o++) {
      let s = 0;
      for (let i = 0; i < n; i++) s += W[o * n + i] * x[i];
      y[o] = s;
    }
    return y;
  };
  /** Gemma's RMSNorm of each consecutive group of `size` features: scaled by 1 + w. */
  const norm = (x: Float64Array, g: Float32Array, size = x.length) => {
    const y = new Float64Array(x.length);
    for (let start = 0; start < x.length; start += size) {
      let ms = 0;
      for (let i = 0; i < size; i++) ms += x[start + i] * x[start + i];
      const r = 1 / Math.sqrt(ms / size + eps);
      for (let i = 0; i < size; i++) y[start + i] = x[start + i] * r * (1 + g[i]);
    }
    return y;
  };
  const frequencies = (theta: number, linearFactor: number) => Array.from({ length: D / 2 }, (_, i) => 1 / Math.pow(theta, (2 * i) / D) / linearFactor);
  const scaling = cfg.rope_scaling;
  const globalFreq = frequencies(cfg.rope_theta, scaling?.rope_type === 'linear' ? scaling.factor : 1);
  const localFreq = frequencies(cfg.rope_local_base_freq, 1);
  /** rotate_half RoPE of each head: x * cos + [-x2, x1] * sin. */
  const rope = (x: Float64Array, pos: number, freq: number[]) => {
    const y = new Float64Array(x.length);
    for (let start = 0; start < x.length; start += D) {
      for (let i = 0; i < D / 2; i++) {
        const [c, s] = [Math.cos(pos * freq[i]), Math.sin(pos * freq[i])];
        const [x1, x2] = [x[start + i], x[start + i + D / 2]];
        y[start + i] = x1 * c - x2 * s;
        y[start + i + D / 2] = x2 * c + x1 * s;
      }
    }
    return y;
  };
  const gelu = (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));

  const E = w('model.embed_tokens.weight');
  const normalizer = castTo(Math.sqrt(C), dtypes.get('model.embed_tokens.weight') as string);
  let xs = tokens.map((t) => Float64Array.from(E.subarray(t * C, (t + 1) * C), (v) => v * normalizer));
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}`;
    const freq = sliding[l] ? localFreq : globalFreq;
    const proj = (name: string, x: Float64Array, out: number) => linear(w(`${p}.${name}.weight`), x, out);
    const normed = xs.map((x) => norm(x, w(`${p}.input_layernorm.weight`)));
    const qs = normed.map((h, t) => rope(norm(proj('self_attn.q_proj', h, H * D), w(`${p}.self_attn.q_norm.weight`), D), t, freq));
    const ks = normed.map((h, t) => rope(norm(proj('self_attn.k_proj', h, KV * D), w(`${p}.self_attn.k_norm.weight`), D), t, freq));
    const vs = normed.map((h) => proj('self_attn.v_proj', h, KV * D));
    xs = xs.map((x, t) => {
      const first = sliding[l] ? Math.max(0, t - window + 1) : 0;
      const heads = new Float64Array(H * D);
      for (let h = 0; h < H; h++) {
        const kv = Math.floor(h / (H / KV));
        const scores: number[] = [];
        for (let j = first; j <= t; j++) {
          let s = 0;
          for (let i = 0; i < D; i++) s += qs[t][h * D + i] * ks[j][kv * D + i];
          scores.push(s / Math.sqrt(cfg.query_pre_attn_scalar));
        }
        const max = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = first; j <= t; j++) for (let i = 0; i < D; i++) heads[h * D + i] += (e[j - first] / z) * vs[j][kv * D + i];
      }
      const attended = norm(proj('self_attn.o_proj', heads, C), w(`${p}.post_attention_layernorm.weight`));
      const h1 = x.map((v, i) => v + attended[i]);
      const n2 = norm(h1, w(`${p}.pre_feedforward_layernorm.weight`));
      const gate = linear(w(`${p}.mlp.gate_proj.weight`), n2, I);
      const up = linear(w(`${p}.mlp.up_proj.weight`), n2, I);
      const mlp = norm(
        linear(
          w(`${p}.mlp.down_proj.weight`),
          gate.map((g, i) => gelu(g) * up[i]),
          C,
        ),
        w(`${p}.post_feedforward_layernorm.weight`),
      );
      return h1.map((v, i) => v + mlp[i]);
    });
  }
  const head = cfg.tie_word_embeddings === false ? w('lm_head.weight') : E;
  return xs.map((x) => linear(head, norm(x, w('model.norm.weight')), cfg.vocab_size));
}

/** `value` as a tensor of `dtype` holds it: through float32, then to bfloat16 by round to nearest even. */
function castTo(value: number, dtype: string): number {
  const f32 = Math.fround(value);
  if (dtype === 'F32') return f32;
  if (dtype !== 'BF16') throw new Error(`the reference casts to F32 or BF16, not ${dtype}`);
  const bits = new Uint32Array(Float32Array.of(f32).buffer)[0];
  const rounded = (bits + 0x7fff + ((bits >>> 16) & 1)) & 0xffff0000;
  return new Float32Array(Uint32Array.of(rounded >>> 0).buffer)[0];
}

/** Every tensor of a single-file F32 or BF16 safetensors checkpoint, widened to float32, and each one's stored dtype. */
function readSafetensors(file: string): { tensors: Map<string, Float32Array>; dtypes: Map<string, string> } {
  const bytes = fs.readFileSync(file);
  const headerLength = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLength).toString('utf8')) as Record<string, { dtype: string; data_offsets: [number, number] }>;
  const tensors = new Map<string, Float32Array>();
  const dtypes = new Map<string, string>();
  for (const [name, entry] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const [begin, end] = entry.data_offsets;
    const at = 8 + headerLength + begin;
    let data: Float32Array;
    if (entry.dtype === 'F32') {
      data = new Float32Array((end - begin) / 4);
      for (let i = 0; i < data.length; i++) data[i] = bytes.readFloatLE(at + 4 * i);
    } else if (entry.dtype === 'BF16') {
      // A bfloat16 is the top half of a float32.
      const words = new Uint32Array((end - begin) / 2);
      for (let i = 0; i < words.length; i++) words[i] = bytes.readUInt16LE(at + 2 * i) << 16;
      data = new Float32Array(words.buffer);
    } else {
      throw new Error(`${name}: the reference reads F32 and BF16, not ${entry.dtype}`);
    }
    tensors.set(name, data);
    dtypes.set(name, entry.dtype);
  }
  return { tensors, dtypes };
}
