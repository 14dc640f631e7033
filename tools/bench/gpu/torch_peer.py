"""PyTorch eager peer of gpu.bench.ts: the same figures on the same weights.

    python3 torch_peer.py MODEL_DIR '{"prefillTokens": 512, "decodeBatches": [1, 32, 128], ...}'

Without a GPU it runs on the CPU, which is how docs/benchmarks.md compares the engine's CPU
figures with PyTorch's on one machine (OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 for one thread;
Debian's PyTorch needs an optimized BLAS such as libopenblas0-pthread installed).

Reads the model directory the engine's model maker wrote (config.json, model.safetensors in
Hugging Face names), runs a decoder of the llama, qwen2, qwen3 or gemma3_text family written
out in plain torch ops from the published architectures (float32; matmuls in full float32,
PyTorch's default), on CUDA when there is a GPU, and prints one JSON line: {"prefill":
tokens/s, "decode": {"1": ..., "32": ...}, "longPrefill": tokens/s, "longDecode": tokens/s,
"sft": tokens/s, "device": name, "logits": the first 16 logits of the prompt's last position,
which gpu.bench.ts compares}; each figure only when the plan asks for it (prefillTokens;
decodeBatches with decodePrompt and decodeSteps; longContext, a prompt that long prefilled,
and one sequence decoded after it; trainRows, trainTokens and trainSteps). With "matmul": [M, K, N] in the plan, also "matmul":
GFLOP/s of one plain [M, K] x [K, N] product (the best of 3 runs of 50). With "generate":
{"prompt": [ids], "steps": n}, one sequence as tools/bench/llamacpp/families.bench.ts times
it: after a short warm-up, the prompt's prefill (tokens/s) and n greedy tokens, the first from
the prefill's logits (decode tokens/s over the n - 1 after it), with each token's logprob:
{"generate": {"prefill": ..., "decode": ..., "tokens": [...], "logprobs": [...]}}.

The families (each from its Hugging Face modeling code's published behaviour):
- qwen3: RMSNorm of each head's queries and keys (q_norm, k_norm) before RoPE; head_dim from
  the config.
- gemma3_text: RMSNorm scaling by (1 + w), in float32; a norm before and after attention and
  before and after the MLP; q_norm and k_norm; GELU (tanh) gate; embeddings times
  sqrt(hidden) (rounded to the embeddings' stored dtype); scores scaled by
  query_pre_attn_scalar^-0.5; the layers layer_types names sliding_attention see only the last
  sliding_window positions and rotate with rope_local_base_freq.
- llama with rope_scaling of type llama3: Meta's frequency-dependent rescaling of RoPE.
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


def read_safetensors(path, device, dtypes):
    """Each tensor of one safetensors file as float32 (read one at a time: a 1B model in f32 is held once)."""
    out = {}
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            f.seek(8 + n + begin)
            t = torch.frombuffer(bytearray(f.read(end - begin)), dtype=DTYPES[entry["dtype"]]).reshape(entry["shape"])
            out[name] = t.to(device=device, dtype=torch.float32)
            dtypes[name] = DTYPES[entry["dtype"]]
    return out


def read_model(directory, device):
    with open(f"{directory}/config.json") as f:
        config = json.load(f)
    try:
        with open(f"{directory}/model.safetensors.index.json") as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    except FileNotFoundError:
        files = ["model.safetensors"]
    weights, dtypes = {}, {}
    for file in files:
        weights.update(read_safetensors(f"{directory}/{file}", device, dtypes))
    return config, weights, dtypes


def token_ids(count, seed, vocab):
    """The prompts of gpu.bench.ts's tokens()."""
    return [3 + ((seed * 7919 + i * 104729) % (vocab - 3)) for i in range(count)]


def inverse_frequencies(base, head_dim, scaling, device):
    """RoPE's base^(-2i/d); with rope_scaling of type llama3, Meta's rescaling of the long wavelengths."""
    half = torch.arange(0, head_dim, 2, dtype=torch.float32, device=device)
    inv = 1.0 / (base ** (half / head_dim))
    kind = (scaling or {}).get("rope_type") or (scaling or {}).get("type") or "default"
    if kind == "default":
        return inv
    if kind == "linear":
        return inv / scaling["factor"]
    if kind != "llama3":
        raise SystemExit(f"torch_peer: rope_scaling {kind} is not supported")
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv
    smooth = (old / wavelen - low) / (high - low)
    blended = (1 - smooth) * inv / factor + smooth * inv
    return torch.where(wavelen > old / low, inv / factor, torch.where(wavelen < old / high, inv, blended))


class Decoder:
    """A decoder of the Llama family: RMSNorm, RoPE, grouped-query attention, a gated MLP, optional LoRA; with Qwen3's and Gemma 3's differences."""

    def __init__(self, config, weights, dtypes):
        self.c = config
        self.w = weights
        self.family = config.get("model_type", "llama")
        self.gemma = self.family == "gemma3_text"
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.kv_heads = config["num_key_value_heads"]
        self.head_dim = config.get("head_dim") or config["hidden_size"] // self.heads
        self.eps = config["rms_norm_eps"]
        lm_head = weights.get("lm_head.weight")
        self.lm_head = lm_head if lm_head is not None else weights["model.embed_tokens.weight"]
        device = self.lm_head.device
        self.inv_freq = inverse_frequencies(config["rope_theta"], self.head_dim, config.get("rope_scaling"), device)
        self.qk_norm = self.family in ("qwen3", "gemma3_text")
        # Gemma 3's own: scores scaled by query_pre_attn_scalar^-0.5, embeddings by sqrt(hidden)
        # in their stored dtype, and a window on the layers layer_types names.
        self.scale = (config["query_pre_attn_scalar"] if self.gemma else self.head_dim) ** -0.5
        embed_dtype = dtypes.get("model.embed_tokens.weight", torch.float32)
        self.embed_scale = torch.tensor(config["hidden_size"] ** 0.5, dtype=embed_dtype).float().item() if self.gemma else 1.0
        self.window = [None] * self.layers
        self.local_inv_freq = None
        if self.gemma and config.get("sliding_window"):
            types = config.get("layer_types") or [
                "full_attention" if (i + 1) % config.get("sliding_window_pattern", 6) == 0 else "sliding_attention" for i in range(self.layers)
            ]
            self.window = [config["sliding_window"] if t == "sliding_attention" else None for t in types]
            self.local_inv_freq = inverse_frequencies(config.get("rope_local_base_freq", 10000.0), self.head_dim, None, device)
        self.lora = None

    def norm(self, x, weight):
        if self.gemma:
            # Gemma's RMSNorm: (1 + w), computed in float32.
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * (1.0 + weight)
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * weight

    def act(self, x):
        return F.gelu(x, approximate="tanh") if self.gemma else F.silu(x)

    def linear(self, x, layer, module, target):
        prefix = f"model.layers.{layer}.{module}.{target}"
        y = F.linear(x, self.w[prefix + ".weight"], self.w.get(prefix + ".bias"))
        if self.lora is not None:
            a, b, scale = self.lora[(layer, target)]
            y = y + scale * F.linear(F.linear(x, a), b)
        return y

    def rope(self, x, positions, inv_freq):
        freqs = positions[:, None].float() * inv_freq[None, :]
        cos, sin = torch.cat([freqs, freqs], -1).cos(), torch.cat([freqs, freqs], -1).sin()
        x1, x2 = x[..., : self.head_dim // 2], x[..., self.head_dim // 2 :]
        return x * cos + torch.cat([-x2, x1], -1) * sin

    def attention(self, q, k, v, causal, window=None):
        """Causal attention of the last T positions over all S; with `window`, a query at p sees keys at p - window < k <= p."""
        k = k.repeat_interleave(self.heads // self.kv_heads, dim=1)
        v = v.repeat_interleave(self.heads // self.kv_heads, dim=1)
        T, S = q.shape[-2], k.shape[-2]
        if window is None and self.scale == self.head_dim**-0.5 and hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        scores = (q @ k.transpose(-1, -2)) * self.scale
        query = torch.arange(S - T, S, device=q.device)[:, None]
        key = torch.arange(S, device=q.device)[None, :]
        hidden = key > query
        if window is not None:
            hidden = hidden | (query - key >= window)
        scores = scores.masked_fill(hidden, float("-inf"))
        return scores.softmax(-1) @ v

    def hidden(self, ids, cache=None):
        """Final-normed hidden states [B, T, C]; `cache` (a list of (k, v) per layer) grows in place."""
        B, T = ids.shape
        start = 0 if cache is None or not cache else cache[0][0].shape[2]
        positions = torch.arange(start, start + T, device=ids.device)
        x = self.w["model.embed_tokens.weight"][ids] * self.embed_scale
        for i in range(self.layers):
            p = f"model.layers.{i}"
            h = self.norm(x, self.w[f"{p}.input_layernorm.weight"])
            q = self.linear(h, i, "self_attn", "q_proj").view(B, T, self.heads, self.head_dim).transpose(1, 2)
            k = self.linear(h, i, "self_attn", "k_proj").view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
            v = self.linear(h, i, "self_attn", "v_proj").view(B, T, self.kv_heads, self.head_dim).transpose(1, 2)
            if self.qk_norm:
                q = self.norm(q, self.w[f"{p}.self_attn.q_norm.weight"])
                k = self.norm(k, self.w[f"{p}.self_attn.k_norm.weight"])
            inv_freq = self.inv_freq if self.window[i] is None else self.local_inv_freq
            q, k = self.rope(q, positions, inv_freq), self.rope(k, positions, inv_freq)
            if cache is not None:
                if len(cache) > i:
                    k = torch.cat([cache[i][0], k], 2)
                    v = torch.cat([cache[i][1], v], 2)
                    cache[i] = (k, v)
                else:
                    cache.append((k, v))
            a = self.attention(q, k, v, causal=T > 1, window=self.window[i]).transpose(1, 2).reshape(B, T, -1)
            a = self.linear(a, i, "self_attn", "o_proj")
            if self.gemma:
                # Gemma 3's four norms: on the attention's output, before the MLP, on the MLP's output.
                x = x + self.norm(a, self.w[f"{p}.post_attention_layernorm.weight"])
                h = self.norm(x, self.w[f"{p}.pre_feedforward_layernorm.weight"])
            else:
                x = x + a
                h = self.norm(x, self.w[f"{p}.post_attention_layernorm.weight"])
            m = self.act(self.linear(h, i, "mlp", "gate_proj")) * self.linear(h, i, "mlp", "up_proj")
            m = self.linear(m, i, "mlp", "down_proj")
            x = x + (self.norm(m, self.w[f"{p}.post_feedforward_layernorm.weight"]) if self.gemma else m)
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


def sft(model, device, plan, V):
    """Tokens/s of LoRA SFT steps (r 8, alpha 16 on all seven projections, AdamW)."""
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

    return plan["trainRows"] * plan["trainTokens"] * plan["trainSteps"] / timed(device, sft_steps)


def generate(model, device, prompt, steps):
    """Prefills `prompt` and decodes `steps` greedy tokens (the first from the prefill's logits): the rates, tokens and logprobs."""
    cache = []
    sync(device)
    t0 = time.perf_counter()
    logprobs = model.logits(model.hidden(torch.tensor([prompt], device=device), cache)[:, -1]).log_softmax(-1)
    token = logprobs.argmax(-1)
    sync(device)
    t1 = time.perf_counter()
    tokens, chosen = [token.item()], [logprobs[0, token].item()]
    for _ in range(steps - 1):
        logprobs = model.logits(model.hidden(token[:, None], cache)[:, -1]).log_softmax(-1)
        token = logprobs.argmax(-1)
        tokens.append(token.item())
        chosen.append(logprobs[0, token].item())
    sync(device)
    t2 = time.perf_counter()
    return {"prefill": len(prompt) / (t1 - t0), "decode": (steps - 1) / (t2 - t1) if steps > 1 else None, "tokens": tokens, "logprobs": chosen}


def main():
    directory, plan = sys.argv[1], json.loads(sys.argv[2])
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    config, weights, dtypes = read_model(directory, device)
    model = Decoder(config, weights, dtypes)
    V = config["vocab_size"]
    figures = {"decode": {}, "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu"}

    with torch.no_grad():
        if "generate" in plan:
            prompt, steps = plan["generate"]["prompt"], plan["generate"]["steps"]
            generate(model, device, prompt[:8], 2)  # warm-up
            figures["generate"] = generate(model, device, prompt, steps)

        if "prefillTokens" in plan:
            prompt = torch.tensor([token_ids(plan["prefillTokens"], 1, V)], device=device)

            def prefill():
                return model.logits(model.hidden(prompt, [])[:, -1])

            figures["logits"] = prefill()[0, :16].tolist()
            figures["prefill"] = plan["prefillTokens"] / min(timed(device, prefill), timed(device, prefill))

        def decode(size, prompt_tokens):
            # Aggregate tokens/s of `size` sequences decoded greedily after prompts of `prompt_tokens`.
            prompts = torch.tensor([token_ids(prompt_tokens, 10 + i, V) for i in range(size)], device=device)
            cache = []
            state = {"next": model.logits(model.hidden(prompts, cache)[:, -1:]).argmax(-1)}

            def step():
                state["next"] = model.logits(model.hidden(state["next"], cache)).argmax(-1)

            step()
            step()

            def steps():
                for _ in range(plan["decodeSteps"]):
                    step()

            return size * plan["decodeSteps"] / timed(device, steps)

        for size in plan.get("decodeBatches", []):
            figures["decode"][str(size)] = decode(size, plan["decodePrompt"])
        if "longContext" in plan:
            long_prompt = torch.tensor([token_ids(plan["longContext"], 1, V)], device=device)

            def long_prefill():
                return model.logits(model.hidden(long_prompt, [])[:, -1])

            figures["longPrefill"] = plan["longContext"] / min(timed(device, long_prefill), timed(device, long_prefill))
            figures["longDecode"] = decode(1, plan["longContext"])

    if "trainSteps" in plan:
        figures["sft"] = sft(model, device, plan, V)

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
