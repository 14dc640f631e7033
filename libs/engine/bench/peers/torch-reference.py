#!/usr/bin/env python3
"""PyTorch eager on the engine's own bench model: the peer figures of docs/benchmarks.md,
measured on the machine the engine's benches run on.

    sudo apt-get install python3-torch python3-numpy libopenblas0-pthread   # Debian bookworm: PyTorch 1.13.1
    /usr/bin/python3 libs/engine/bench/peers/torch-reference.py    (THREADS=1 MODEL=var/models/bench-smollm2-135m)

Without an optimized BLAS installed, Debian's PyTorch multiplies with the reference BLAS
(libblas3), about 20 times slower; libopenblas0-pthread takes its place (update-alternatives).

A plain Llama in PyTorch ops (RMSNorm, RoPE, grouped-query attention, SwiGLU, tied lm_head),
loaded from the same safetensors file the engine's benches load, and timed the way those
benches time the engine, on each number of threads in THREADS (torch.set_num_threads):

- decode, batch 1: 48 greedy tokens after a 24-token prompt, KV cache (weights.bench.ts);
- decode, batch 8: the same for 8 sequences at once, tokens/s summed over them (generate.bench.ts);
- prefill: one 128-token prompt into a fresh cache, logits of the last position only, best of
  3 after a warm-up (prefill.bench.ts);
- one LoRA training step: r 8, alpha 16 on q, k, v, o, gate, up, down of every layer, one
  64-token sequence (the first 16 targets masked), cross-entropy, backward, gradient clipping
  to norm 0.1 and AdamW, median of 5 steps after a warm-up (train.bench.ts). No activation
  checkpointing: autograd keeps every intermediate.

Prints one markdown table.
"""
import json
import os
import statistics
import struct
import subprocess
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '../../../..'))
MODEL = os.environ.get('MODEL', os.path.join(ROOT, 'var/models/bench-smollm2-135m'))
THREADS = [int(n) for n in os.environ.get('THREADS', '1').split(',')]


def load_safetensors(path):
    """Every tensor of a safetensors file as float32 (F32 or BF16 stored)."""
    with open(path, 'rb') as f:
        size = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(size))
        data = f.read()
    tensors = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        start, end = info['data_offsets']
        if info['dtype'] == 'F32':
            array = np.frombuffer(data[start:end], dtype=np.float32)
        elif info['dtype'] == 'BF16':
            array = (np.frombuffer(data[start:end], dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            raise ValueError(f'{name}: dtype {info["dtype"]} not handled')
        tensors[name] = torch.from_numpy(array.reshape(info['shape']).copy())
    return tensors


class Lora(torch.nn.Module):
    """y = x W^T + (alpha / r) (x A^T) B^T with W frozen; A random, B zeros (as PEFT starts)."""

    def __init__(self, weight, r, alpha):
        super().__init__()
        self.weight = weight
        self.a = torch.nn.Parameter(torch.randn(r, weight.shape[1]) * 0.01)
        self.b = torch.nn.Parameter(torch.zeros(weight.shape[0], r))
        self.scale = alpha / r

    def __call__(self, x):
        return F.linear(x, self.weight) + F.linear(F.linear(x, self.a), self.b) * self.scale


class Frozen:
    def __init__(self, weight):
        self.weight = weight

    def __call__(self, x):
        return F.linear(x, self.weight)


class Llama:
    def __init__(self, config, tensors, lora_rank=0):
        self.c = config
        self.embed = tensors['model.embed_tokens.weight']
        self.lm_head = tensors.get('lm_head.weight', self.embed)
        self.norm = tensors['model.norm.weight']
        self.adapters = []

        def projection(name):
            weight = tensors[name + '.weight']
            if lora_rank == 0:
                return Frozen(weight)
            adapter = Lora(weight, lora_rank, 2 * lora_rank)
            self.adapters.append(adapter)
            return adapter

        self.layers = []
        for i in range(config['num_hidden_layers']):
            p = f'model.layers.{i}.'
            self.layers.append({
                'input_norm': tensors[p + 'input_layernorm.weight'],
                'post_norm': tensors[p + 'post_attention_layernorm.weight'],
                **{n: projection(p + 'self_attn.' + n + '_proj') for n in ('q', 'k', 'v', 'o')},
                **{n: projection(p + 'mlp.' + n + '_proj') for n in ('gate', 'up', 'down')},
            })
        D = config['head_dim']
        self.inv_freq = 1.0 / (config['rope_theta'] ** (torch.arange(0, D, 2, dtype=torch.float32) / D))

    def parameters(self):
        return [p for a in self.adapters for p in (a.a, a.b)]

    def rms_norm(self, x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.c['rms_norm_eps']) * weight

    def rope(self, x, positions):
        # x [B, heads, T, D]; rotate_half convention (HF Llama)
        angles = positions[:, None].float() * self.inv_freq[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], -1)
        sin = torch.cat([angles.sin(), angles.sin()], -1)
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def forward(self, ids, cache=None, last_only=False):
        """ids [B, T] -> logits [B, T or 1, V]; cache: a list of (k, v) per layer, extended in place."""
        c = self.c
        B, T = ids.shape
        H, KV, D = c['num_attention_heads'], c['num_key_value_heads'], c['head_dim']
        past = 0 if cache is None or not cache else cache[0][0].shape[2]
        positions = torch.arange(past, past + T)
        x = self.embed[ids]
        for i, layer in enumerate(self.layers):
            h = self.rms_norm(x, layer['input_norm'])
            q = self.rope(layer['q'](h).view(B, T, H, D).transpose(1, 2), positions)
            k = self.rope(layer['k'](h).view(B, T, KV, D).transpose(1, 2), positions)
            v = layer['v'](h).view(B, T, KV, D).transpose(1, 2)
            if cache is not None:
                if len(cache) <= i:
                    cache.append((k, v))
                else:
                    k = torch.cat([cache[i][0], k], 2)
                    v = torch.cat([cache[i][1], v], 2)
                    cache[i] = (k, v)
            S = k.shape[2]
            k = k.repeat_interleave(H // KV, 1)
            v = v.repeat_interleave(H // KV, 1)
            scores = q @ k.transpose(-1, -2) / D ** 0.5
            if T > 1:
                causal = torch.full((T, S), float('-inf')).triu(S - T + 1)
                scores = scores + causal
            attention = (scores.softmax(-1) @ v).transpose(1, 2).reshape(B, T, H * D)
            x = x + layer['o'](attention)
            h = self.rms_norm(x, layer['post_norm'])
            x = x + layer['down'](F.silu(layer['gate'](h)) * layer['up'](h))
        if last_only:
            x = x[:, -1:]
        return F.linear(self.rms_norm(x, self.norm), self.lm_head)


def decode_rate(model, batch, generator):
    """Tokens/s of 48 greedy steps after a 24-token prompt, summed over `batch` sequences."""
    V = model.c['vocab_size']
    with torch.no_grad():
        prompt = torch.randint(3, V, (batch, 24), generator=generator)
        cache = []
        next_ids = model.forward(prompt, cache, last_only=True)[:, -1].argmax(-1, keepdim=True)
        t0 = time.perf_counter()
        for _ in range(48):
            next_ids = model.forward(next_ids, cache)[:, -1].argmax(-1, keepdim=True)
        return 48 * batch / (time.perf_counter() - t0)


def prefill_rate(model, generator):
    V = model.c['vocab_size']
    prompt = torch.randint(3, V, (1, 128), generator=generator)
    best = float('inf')
    with torch.no_grad():
        for attempt in range(4):
            t0 = time.perf_counter()
            model.forward(prompt, [], last_only=True)
            if attempt > 0:
                best = min(best, time.perf_counter() - t0)
    return 128 / best


def train_step_seconds(config, tensors, generator):
    model = Llama(config, tensors, lora_rank=8)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)
    V = config['vocab_size']
    mask = torch.tensor([0.0 if i < 16 else 1.0 for i in range(63)])

    def step():
        tokens = torch.randint(3, V, (1, 64), generator=generator)
        logprobs = model.forward(tokens[:, :-1])[0].log_softmax(-1)
        nll = -logprobs.gather(1, tokens[0, 1:, None])[:, 0]
        loss = (nll * mask).sum() / mask.sum()
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()

    step()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def measure(threads):
    """One table row, in this process, on `threads` threads (OpenBLAS's own count was set before it loaded)."""
    config = json.load(open(os.path.join(MODEL, 'config.json')))
    tensors = load_safetensors(os.path.join(MODEL, 'model.safetensors'))
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        model = Llama(config, tensors)
        one = decode_rate(model, 1, generator)
        eight = decode_rate(model, 8, generator)
        prefill = prefill_rate(model, generator)
    step = train_step_seconds(config, tensors, generator)
    print(f'| {threads} | {one:.1f} | {eight:.1f} | {prefill:.1f} | {step:.2f} s |', flush=True)


def main():
    if 'TORCH_REFERENCE_THREADS' in os.environ:
        measure(int(os.environ['TORCH_REFERENCE_THREADS']))
        return
    print(f'PyTorch {torch.__version__}, {MODEL}, load average {os.getloadavg()[0]:.1f}')
    print('| threads | decode batch 1 (tok/s) | decode batch 8 (tok/s) | prefill 128 (tok/s) | LoRA train step, 64 tokens |')
    print('|---|---|---|---|---|', flush=True)
    for threads in THREADS:
        # Each thread count in a fresh process: OpenBLAS reads its thread count when it loads.
        count = str(threads)
        env = {**os.environ, 'TORCH_REFERENCE_THREADS': count, 'OPENBLAS_NUM_THREADS': count, 'OMP_NUM_THREADS': count}
        subprocess.run([sys.executable, __file__], env=env, check=True)


if __name__ == '__main__':
    main()
