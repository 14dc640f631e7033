#!/usr/bin/env bash
# One device call's worth of the GPU benches, from the folder tools/bench/gpu/pack.sh wrote, the
# most wanted first, all of them within SECONDS (default 480): a part is cut short by what is
# left (the GPU bench prints each model's table as that model ends), and not started once under
# 30 seconds are left. Meanwhile the 1.5B and 3B shapes' weights are made in another process,
# the part that measures them waiting for it. Where OUT names a directory (the device tool's),
# everything printed also goes to $OUT/gpu-bench.log. ARGS go to every part but the stack's (on
# lavapipe, `--smoke --no-peer --tokens 16 --runs 1` runs each part's tiny version, and the
# stack's job on the tiny model).
#
#   bash tmp/gpu-bench/draw.sh [SECONDS [ARGS...]]
#
# The parts, through run.sh: the goals' table for the SmolLM2-135M and Qwen2.5-0.5B shapes
# (engine kernels, PyTorch beside them); a training step's products in each tile, every shape;
# then an ART RL job through the stack on webgpu workers, where the stack's folder
# (pack-stack.sh; GPU_STACK, default gpu-stack beside this folder) is there too; the goals'
# table for the 1.5B and 3B shapes; prompt attention's training programs.
set -uo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STACK="${GPU_STACK:-$HERE/../gpu-stack}"
budget="${1:-480}"
shift $(($# > 0 ? 1 : 0))
extra=("$@")
deadline=$((SECONDS + budget))
out="${OUT:-}"
if [ -n "$out" ] && [ -d "$out" ]; then exec > >(tee -a "$out/gpu-bench.log") 2>&1; fi
# run.sh's own copy to the log would print everything twice.
export -n OUT
# Node.js, Dawn and the bundles unpacked once, here, before processes that run side by side.
# shellcheck source=gpu-env.sh
source "$HERE/gpu-env.sh"
large=qwen2.5-1.5b,qwen2.5-3b
smoke=
[[ " ${extra[*]} " == *" --smoke "* ]] && smoke=1
# A smoke run's shapes are the same tiny ones in every part: nothing to make beside them.
maker=
if [ -z "$smoke" ]; then
  timeout "$budget" bash "$HERE/run.sh" --make --only "$large" "${extra[@]}" >"$HERE/make-large.log" 2>&1 &
  maker=$!
fi

# Runs the command after $1 (the part's name) for at most the seconds left.
part() {
  local name="$1" left=$((deadline - SECONDS))
  shift
  if ((left < 30)); then
    echo "== $name: not run, ${left} s of ${budget} left"
    return
  fi
  echo "== $name (at most ${left} s)"
  local started=$SECONDS status=0
  timeout --signal=INT --kill-after=10 "$left" "$@" || status=$?
  echo "== $name: $((SECONDS - started)) s, exit ${status}$( ((status == 124)) && echo ', cut short')"
}

part 'goals, small shapes' bash "$HERE/run.sh" --kernels on --only smollm2-135m,qwen2.5-0.5b "${extra[@]}"
part 'products in each tile' bash "$HERE/run.sh" products --only "smollm2-135m,qwen2.5-0.5b,$large" "${extra[@]}"
if [ -f "$STACK/run-stack.sh" ]; then
  if [ -n "$smoke" ]; then job=(--preset tiny --groups 2 --group-size 2 --rollout-tokens 8); else job=(--preset smollm2-135m --kept-mb 16384 --groups 16 --group-size 8 --rollout-tokens 64); fi
  # run-stack.sh keeps its own log and, on failure, the apps' logs in OUT.
  part 'an ART RL job through the stack' env OUT="$out" GPU_PACK="$HERE" bash "$STACK/run-stack.sh" "${job[@]}"
else
  echo "== an ART RL job through the stack: no stack folder at $STACK (pack-stack.sh)"
fi
if [ -n "$maker" ] && ! wait "$maker"; then
  echo "== making $large failed:"
  tail -n 20 "$HERE/make-large.log"
fi
part 'goals, large shapes' bash "$HERE/run.sh" --kernels on --only "$large" "${extra[@]}"
part 'prompt attention' bash "$HERE/run.sh" attention "${extra[@]}"
