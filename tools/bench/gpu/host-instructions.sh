#!/usr/bin/env bash
# The host's part of a step on webgpu (tools/bench/gpu/host.bench.ts) counted in instructions
# by valgrind's callgrind rather than timed: a small VM's timing of one build varies by a third
# from run to run, its instruction counts by a few per cent, so two builds compare on one
# machine. The bench runs bundled (tools/bench/built.mjs) on node --single-threaded, so that V8
# compiles on the main thread, in the same order every run. Ten to twenty minutes.
#
#   bash tools/bench/gpu/host-instructions.sh [--steps 3] [--train-rows 4] [--train-tokens 16]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
cd "$ROOT"
# shellcheck source=../../../scripts/lib/common.sh
source scripts/lib/common.sh
ensure_node
command -v valgrind >/dev/null || { echo "host-instructions: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
out="$ROOT/tmp/host-instructions"
rm -rf "$out" && mkdir -p "$out"
bundle="$(node tools/bench/built.mjs --bundle-only tools/bench/gpu/host.bench.ts)"
CALLGRIND_OUT="$out/callgrind.out" valgrind --tool=callgrind -q --callgrind-out-file="$out/callgrind.out" \
  node --single-threaded "$bundle" "$@"
