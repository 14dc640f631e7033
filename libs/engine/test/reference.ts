import * as fs from 'node:fs';
import * as path from 'node:path';
import { SafetensorsFile } from '../src/safetensors';

/**
 * A deliberately naive Llama/Qwen2 forward pass in plain JS loops, written from the paper
 * and the HF modeling code, sharing nothing with the engine's model: the yardstick.
 * Returns the logits of every position.
 */
export function referenceForward(dir: string, tokens: number[]): Float32Array[] {
  const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
  const st = SafetensorsFile.open(path.join(dir, 'model.safetensors'));
  const w = (name: string) => st.read(name).data;
  const has = (name: string) => st.has(name);
  const C: number = cfg.hidden_size;
  const H: number = cfg.num_attention_heads;
  const KV: number = cfg.num_key_value_heads;
  const D: number = cfg.head_dim ?? C / H;
  const eps: number = cfg.rms_norm_eps;

  const matvec = (W: Float32Array, x: Float32Array, out: number, bias?: Float32Array) => {
    const inF = x.length;
    const y = new Float32Array(out);
    for (let o = 0; o < out; o++) {
      let s = bias ? bias[o] : 0;
      for (let i = 0; i < inF; i++) s += W[o * inF + i] * x[i];
      y[o] = s;
    }
    return y;
  };
  const rmsnorm = (x: Float32Array, g: Float32Array) => {
    let ms = 0;
    for (const v of x) ms += v * v;
    const r = 1 / Math.sqrt(ms / x.length + eps);
    return x.map((v, i) => v * r * g[i]);
  };

  // Inverse frequencies, with Llama 3 scaling as transformers' _compute_llama3_parameters.
  const inv = Array.from({ length: D / 2 }, (_, i) => 1 / Math.pow(cfg.rope_theta, (2 * i) / D));
  const rs = cfg.rope_scaling;
  if (rs) {
    const lowWl = rs.original_max_position_embeddings / rs.low_freq_factor;
    const highWl = rs.original_max_position_embeddings / rs.high_freq_factor;
    for (let i = 0; i < inv.length; i++) {
      const wl = (2 * Math.PI) / inv[i];
      if (wl > lowWl) inv[i] /= rs.factor;
      else if (wl >= highWl) {
        const s = (rs.original_max_position_embeddings / wl - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
        inv[i] = (1 - s) * (inv[i] / rs.factor) + s * inv[i];
      }
    }
  }
  const rope = (v: Float32Array, heads: number, pos: number) => {
    const out = new Float32Array(v.length);
    for (let h = 0; h < heads; h++) {
      for (let i = 0; i < D / 2; i++) {
        const a = pos * inv[i];
        const x1 = v[h * D + i];
        const x2 = v[h * D + i + D / 2];
        out[h * D + i] = x1 * Math.cos(a) - x2 * Math.sin(a);
        out[h * D + i + D / 2] = x2 * Math.cos(a) + x1 * Math.sin(a);
      }
    }
    return out;
  };

  const E = w('model.embed_tokens.weight');
  let xs = tokens.map((t) => E.slice(t * C, (t + 1) * C));
  for (let l = 0; l < cfg.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const bias = (n: string) => (has(`${p}.${n}.bias`) ? w(`${p}.${n}.bias`) : undefined);
    const qs: Float32Array[] = [];
    const ks: Float32Array[] = [];
    const vs: Float32Array[] = [];
    xs.forEach((x, t) => {
      const h = rmsnorm(x, w(`${p}.input_layernorm.weight`));
      qs.push(rope(matvec(w(`${p}.self_attn.q_proj.weight`), h, H * D, bias('self_attn.q_proj')), H, t));
      ks.push(rope(matvec(w(`${p}.self_attn.k_proj.weight`), h, KV * D, bias('self_attn.k_proj')), KV, t));
      vs.push(matvec(w(`${p}.self_attn.v_proj.weight`), h, KV * D, bias('self_attn.v_proj')));
    });
    xs = xs.map((x, t) => {
      const attn = new Float32Array(H * D);
      for (let h = 0; h < H; h++) {
        const kvh = Math.floor(h / (H / KV));
        const scores = [];
        for (let j = 0; j <= t; j++) {
          let s = 0;
          for (let i = 0; i < D; i++) s += qs[t][h * D + i] * ks[j][kvh * D + i];
          scores.push(s / Math.sqrt(D));
        }
        const m = Math.max(...scores);
        const e = scores.map((s) => Math.exp(s - m));
        const z = e.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= t; j++) for (let i = 0; i < D; i++) attn[h * D + i] += (e[j] / z) * vs[j][kvh * D + i];
      }
      const o = matvec(w(`${p}.self_attn.o_proj.weight`), attn, C, bias('self_attn.o_proj'));
      const h1 = x.map((v, i) => v + o[i]);
      const n2 = rmsnorm(h1, w(`${p}.post_attention_layernorm.weight`));
      const I: number = cfg.intermediate_size;
      const g = matvec(w(`${p}.mlp.gate_proj.weight`), n2, I);
      const u = matvec(w(`${p}.mlp.up_proj.weight`), n2, I);
      const a = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * u[i]);
      const d = matvec(w(`${p}.mlp.down_proj.weight`), a, C);
      return h1.map((v, i) => v + d[i]);
    });
  }
  const head = cfg.tie_word_embeddings ? E : w('lm_head.weight');
  const out = xs.map((x) => matvec(head, rmsnorm(x, w('model.norm.weight')), cfg.vocab_size));
  st.close();
  return out;
}
