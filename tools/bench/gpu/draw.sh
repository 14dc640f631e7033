#!/usr/bin/env bash
# One device call's worth of the GPU benches, from the folder tools/bench/gpu/pack.sh wrote:
# each part through run.sh, the most wanted first, all of them within SECONDS (default 480),
# a part cut short by what is left (it prints each model's table as that model ends), a part
# not started once under 30 seconds are left. Meanwhile the 1.5B and 3B shapes' weights are made
# in another process, the last part waiting for it. Where OUT names a directory (the device
# tool's), everything printed also goes to $OUT/gpu-bench.log. ARGS go to every part (on
# lavapipe, `--smoke --no-peer --tokens 16 --runs 1` runs each part's tiny version).
#
#   bash tmp/gpu-bench/draw.sh [SECONDS [ARGS...]]
#
# The parts: the goals' table for the SmolLM2-135M and Qwen2.5-0.5B shapes (engine kernels,
# PyTorch beside them); a training step's products in each tile, every shape; prompt
# attention's training programs; the goals' table for the 1.5B and 3B shapes.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
budget="${1:-480}"
shift $(($# > 0 ? 1 : 0))
extra=("$@")
deadline=$((SECONDS + budget))
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then exec > >(tee -a "$OUT/gpu-bench.log") 2>&1; fi
# run.sh's own copy to the log would print everything twice.
export -n OUT
# Node.js and Dawn unpacked once, here, before run.sh's processes below run side by side.
# shellcheck source=gpu-env.sh
source "$HERE/gpu-env.sh"
large=qwen2.5-1.5b,qwen2.5-3b
# A smoke run's shapes are the same tiny ones in every part: nothing to make beside them.
maker=
if [[ " ${extra[*]} " != *" --smoke "* ]]; then
  timeout "$budget" bash "$HERE/run.sh" --make --only "$large" "${extra[@]}" >"$HERE/make-large.log" 2>&1 &
  maker=$!
fi

# Runs run.sh with the arguments after $1 (the part's name) for at most the seconds left.
part() {
  local name="$1" left=$((deadline - SECONDS))
  shift
  if ((left < 30)); then
    echo "== $name: not run, ${left} s of ${budget} left"
    return
  fi
  echo "== $name (at most ${left} s)"
  local started=$SECONDS status=0
  timeout --signal=INT --kill-after=10 "$left" bash "$HERE/run.sh" "$@" "${extra[@]}" || status=$?
  echo "== $name: $((SECONDS - started)) s, exit ${status}$( ((status == 124)) && echo ', cut short')"
}

part 'goals, small shapes' --kernels on --only smollm2-135m,qwen2.5-0.5b
part 'products in each tile' products --only smollm2-135m,qwen2.5-0.5b,$large
part 'prompt attention' attention
if [ -n "$maker" ] && ! wait "$maker"; then
  echo "== making $large failed:"
  tail -n 20 "$HERE/make-large.log"
fi
part 'goals, large shapes' --kernels on --only "$large"
