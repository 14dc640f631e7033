#!/usr/bin/env bash
# Runs the engine's CPU benches from the folder tools/bench/cpu/pack.sh wrote, with the
# PyTorch peer (one thread, then every core) between them: makes the f32 and bf16
# SmolLM2-135M-shape models (seed 0) under var/models/, then prefill on THREADS matmul threads,
# a 64-token LoRA step on TRAIN_THREADS, the adapted projections' passes on every core (the
# LoRA backward beside the frozen dx against divided: lora-threads.bench), and one sequence
# against the memory limit. Every
# figure goes to stdout; with OUT set, the logs and the rewritten docs/benchmarks.md go there.
# The GPU stays out of it (CUDA_VISIBLE_DEVICES is empty), so PyTorch runs on the CPU.
#
#   THREADS=1,4,16 TRAIN_THREADS=1,16 bash run.sh
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"
if ! command -v node >/dev/null; then
  [ -x bin/node ] || { mkdir -p bin && xz -dc node.xz >bin/node && chmod +x bin/node; }
  export PATH="$HERE/bin:$PATH"
fi
export CUDA_VISIBLE_DEVICES=
# The first python3 with torch: PATH's, else Debian's (python3-torch).
PYTHON=python3
$PYTHON -c 'import torch' 2>/dev/null || PYTHON=/usr/bin/python3
cores=$(nproc)
THREADS="${THREADS:-1,2,$cores}"
TRAIN_THREADS="${TRAIN_THREADS:-1,$cores}"
LOG="${OUT:-$HERE}"
mkdir -p "$LOG"
{
  date -u
  lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Core|Socket|NUMA node\(s\)|L2|L3|MHz' || true
  grep -m1 -o -w -E 'avx512f|avx2' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
  node --version
  $PYTHON -c 'import torch; print("torch", torch.__version__); print(torch.__config__.show())' || true
} 2>&1 | tee "$LOG/machine.txt"
node libs/engine/bench/make-model.js --preset smollm2-135m --out var/models/bench-smollm2-135m --seed 0 --dtype F32
node libs/engine/bench/make-model.js --preset smollm2-135m --out var/models/bench-smollm2-135m-bf16 --seed 0 --dtype BF16
# Without torch the peer's lines say so and the benches still run.
peer() {
  $PYTHON torch_peer.py var/models/bench-smollm2-135m \
    '{"prefillTokens": 128, "decodeBatches": [1], "decodePrompt": 24, "decodeSteps": 16, "trainRows": 1, "trainTokens": 64, "trainSteps": 5}' || true
}
echo "== PyTorch, one thread"; OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 peer 2>&1 | tee -a "$LOG/peer.txt"
echo "== prefill, THREADS=$THREADS"; THREADS="$THREADS" ROUNDS="${ROUNDS:-2}" node libs/engine/bench/prefill.bench.js 2>&1 | tee "$LOG/prefill.txt"
echo "== training step, THREADS=$TRAIN_THREADS"; THREADS="$TRAIN_THREADS" ROUNDS="${ROUNDS:-2}" STEPS=3 node libs/engine/bench/train-threads.bench.js 2>&1 | tee "$LOG/train-threads.txt"
echo "== LoRA beside the frozen products, THREADS=$cores"; THREADS="$cores" M=64,2048 ROUNDS="${ROUNDS:-2}" node libs/engine/bench/lora-threads.bench.js 2>&1 | tee "$LOG/lora-threads.txt"
echo "== PyTorch, one thread"; OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 peer 2>&1 | tee -a "$LOG/peer.txt"
echo "== PyTorch, $cores threads"; OMP_NUM_THREADS=$cores peer 2>&1 | tee -a "$LOG/peer.txt"
echo "== one sequence against the memory limit"; ROUNDS="${WEIGHT_ROUNDS:-3}" PROMPTS=1 node libs/engine/bench/weights.bench.js 2>&1 | tee "$LOG/weights.txt"
[ -z "${OUT:-}" ] || cp docs/benchmarks.md "$OUT/"
