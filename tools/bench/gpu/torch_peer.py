"""PyTorch eager peer of gpu.bench.ts: the same figures on the same weights.

    python3 torch_peer.py MODEL_DIR '{"prefillTokens": 512, "decodeBatches": [1, 32, 128], ...}'

Without a GPU it runs on the CPU, which is how docs/benchmarks.md compares the engine's CPU
figures with PyTorch's on one machine (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 for one thread;
Debian's PyTorch needs an optimized BLAS such as libopenblas0-pthread installed).

Reads the model directory the engine's model maker wrote (config.json, model.safetensors in
Hugging Face names), runs a Llama/Qwen2 decoder written out in plain torch ops (float32;
matmuls in full float32, PyTorch's default), on CUDA when there is a GPU, and prints one JSON
line: {"prefill": tokens/s, "decode": {"1": ..., "32": ...}, "sft": tokens/s, "device": name,
"logits": the first 16 logits of the prompt's last position, which gpu.bench.ts compares};
with "matmul": [M, K, N] in the plan, also "matmul": GFLOP/s of one plain [M, K] x [K, N]
product (the best of 3 runs of 50).
The prompts are the ones gpu.bench.ts uses, so both sides do the same work: prefill of one
prompt with the logits of its last position; greedy decoding of a batch whose sequences all
start from a prompt of the same length (argmax on the device); one LoRA SFT step (r 8,
alpha 16 on all seven projections, AdamW with the reference trainer's settings) on rows of
tokens whose first 8 targets carry no loss.
"""

import json
import math
import struct
import sys
import time

import torch
import torch.nn.functional as F

DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def read_safetensors(path, device):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        t = torch.frombuffer(bytearray(data[begin:end]), dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
        out[name] = t.to(device=device, dtype=torch.float32)
    return out


def read_model(directory, device):
    with open(f"{directory}/config.json") as f:
        config = json.load(f)
    try:
        with open(f"{directory}/model.safetensors.index.json") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    except FileNotFoundError:
        files = ["model.safetensors"]
    weights = {}
    for file in files:
        weights.update(read_safetensors(f"{directory}/{file}", device))
    return config, weights


def token_ids(count, seed, vocab):
    """The prompts of gpu.bench.ts's tokens()."""
    return [3 + ((seed * 7919 + i * 104729) % (vocab - 3)) for i in range(count)]


class Decoder:
    """A Llama-family decoder: RMSNorm, RoPE, grouped-query attention, SwiGLU, optional LoRA."""

    def __init__(self, config, weights):
        self.c = config
        self.w = weights
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config["num_key_value_heads"]
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config["rms_norm_eps"]
        lm_head = weights.get("lm_head.weight")
        self.lm_head = lm_head if lm_head is not None else weights["model.embed_tokens.weight"]
        half = torch.arange(0, self.head_dim, 2, dtype=torch.float32, device=self.lm_head.device)
        self.inv_freq = 1.0 / (config["rope_theta"] ** (half / self.head_dim))
        self.lora = None

    def norm(self, x, weight):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def linear(self, x, layer, module, target):
        prefix = f"model.layers.{layer}.{module}.{target}"
        y = F.linear(x, self.w[prefix + ".weight"], self.w.get(prefix + ".bias"))
        if self.lora is not None:
            a, b, scale = self.lora[(layer, target)]
            y = y + scale * F.linear(F.linear(x, a), b)
        return y

    def rope(self, x, positions):
        freqs = positions[:, None].float() * self.inv_freq[None, :]
        cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()
        x1, x2 = x[..., : self.head_dim // 2], x[..., self.head_dim // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def attention(self, q, k, v, causal):
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        scores = q @ k.transpose(-1, -2) / math.sqrt(self.head_dim)
        if causal:
            T, S = scores.shape[-2:]
            scores = scores + torch.full((T, S), float("-inf"), device=q.device).triu(S - T + 1)
        return scores.softmax(-1) @ v

    def hidden(self, ids, cache=None):
        """Final-normed hidden states [B, T, C]; `cache` (a list of (k, v) per layer) grows in place."""
        B, T = ids.shape
        start = 0 if cache is None or not cache else cache[0][0].shape[2]
        positions = torch.arange(start, start + T, device=ids.device)
        x = self.w["model.embed_tokens.weight"][ids]
        for i in range(self.layers):
            h = self.norm(x, self.w[f"model.layers.{i}.input_layernorm.weight"])
            q = self.linear(h, i, "self_attn", "q_proj").view(B, T, self.heads, self.head_dim).transpose(1, 2)
            k = self.linear(h, i, "self_attn", "k_proj").view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.linear(h, i, "self_attn", "v_proj").view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
            q, k = self.rope(q, positions), self.rope(k, positions)
            if cache is not None:
                if len(cache) > i:
                    k = torch.cat([cache[i][0], k], 2)
                    v = torch.cat([cache[i][1], v], 2)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
            a = self.attention(q, k, v, causal=T > 1).transpose(1, 2).reshape(B, T, -1)
            x = x + self.linear(a, i, "self_attn", "o_proj")
            h = self.norm(x, self.w[f"model.layers.{i}.post_attention_layernorm.weight"])
            m = F.silu(self.linear(h, i, "mlp", "gate_proj")) * self.linear(h, i, "mlp", "up_proj")
            x = x + self.linear(m, i, "mlp", "down_proj")
        return self.norm(x, self.w["model.norm.weight"])

    def logits(self, hidden):
        return F.linear(hidden, self.lm_head)

    def attach_lora(self, r=8, alpha=16, seed=1):
        generator = torch.Generator().manual_seed(seed)
        self.lora = {}
        device = self.lm_head.device
        for i in range(self.layers):
            for target in TARGETS:
                module = "mlp" if target in ("gate_proj", "up_proj", "down_proj") else "self_attn"
                out_features, in_features = self.w[f"model.layers.{i}.{module}.{target}.weight"].shape
                a = (torch.randn(r, in_features, generator=generator) / math.sqrt(in_features)).to(device).requires_grad_()
                b = torch.zeros(out_features, r, device=device, requires_grad=True)
                self.lora[(i, target)] = (a, b, alpha / r)
        return [p for a, b, _ in self.lora.values() for p in (a, b)]


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def timed(device, fn):
    sync(device)
    t0 = time.perf_counter()
    fn()
    sync(device)
    return time.perf_counter() - t0


def main():
    directory, plan = sys.argv[1], json.loads(sys.argv[2])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config, weights = read_model(directory, device)
    model = Decoder(config, weights)
    V = config["vocab_size"]
    figures = {"decode": {}, "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"}

    with torch.no_grad():
        prompt = torch.tensor([token_ids(plan["prefillTokens"], 1, V)], device=device)

        def prefill():
            return model.logits(model.hidden(prompt, [])[:, -1])

        figures["logits"] = prefill()[0, :16].tolist()
        figures["prefill"] = plan["prefillTokens"] / min(timed(device, prefill), timed(device, prefill))

        for size in plan["decodeBatches"]:
            prompts = torch.tensor([token_ids(plan["decodePrompt"], 10 + i, V) for i in range(size)], device=device)
            cache = []
            state = {"next": model.logits(model.hidden(prompts, cache)[:, -1:]).argmax(-1)}

            def step():
                state["next"] = model.logits(model.hidden(state["next"], cache)).argmax(-1)

            step()
            step()

            def steps():
                for _ in range(plan["decodeSteps"]):
                    step()

            figures["decode"][str(size)] = size * plan["decodeSteps"] / timed(device, steps)
            del cache

    params = model.attach_lora()
    optimizer = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.99), weight_decay=0.1)
    rows = torch.tensor([token_ids(plan["trainTokens"], 100 + r, V) for r in range(plan["trainRows"])], device=device)
    targets = rows[:, 1:].clone()
    targets[:, :7] = -100  # the first 8 tokens carry no loss: no target predicts them

    def sft_step():
        logits = model.logits(model.hidden(rows[:, :-1]))
        loss = F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1), ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, 0.1)
        optimizer.step()

    sft_step()

    def sft_steps():
        for _ in range(plan["trainSteps"]):
            sft_step()

    figures["sft"] = plan["trainRows"] * plan["trainTokens"] * plan["trainSteps"] / timed(device, sft_steps)

    if "matmul" in plan:
        m, k, n = plan["matmul"]
        a = torch.randn(m, k, device=device)
        b = torch.randn(k, n, device=device)

        def products():
            for _ in range(50):
                torch.matmul(a, b)

        products()
        figures["matmul"] = 50 * 2 * m * k * n / min(timed(device, products) for _ in range(3)) / 1e9
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
