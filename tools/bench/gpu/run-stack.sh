#!/usr/bin/env bash
# Runs an ART RL job through the whole stack with webgpu workers (training-jobs.bench.ts) from
# the folder tools/bench/gpu/pack-stack.sh wrote, on a machine with the NVIDIA driver. Node.js,
# Dawn and the Vulkan set-up come from the GPU pack (pack.sh), by default the folder gpu-bench
# beside this one (GPU_PACK to name another); that pack's draw.sh runs this in its turn.
# Starts a private PostgreSQL server (as user nobody when run as root: initdb refuses root) and
# the stack's nats-server, both unpacked under /tmp, and stops them at the end. Arguments go to
# the bench (--preset, --rollout-tokens, --groups, --group-size, --packed, --kept-mb); --backend
# is webgpu unless given.
#
#   bash tmp/gpu-stack/run-stack.sh --preset smollm2-135m
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
GPU_PACK="${GPU_PACK:-$HERE/../gpu-bench}"
[ -f "$GPU_PACK/gpu-env.sh" ] || { echo "no GPU pack at $GPU_PACK: write it with tools/bench/gpu/pack.sh, or set GPU_PACK" >&2; exit 1; }
# shellcheck source=gpu-env.sh
source "$GPU_PACK/gpu-env.sh"
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then exec > >(tee -a "$OUT/gpu-stack.log") 2>&1; fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not found"

WORK=$(mktemp -d /tmp/trainyard-stack-XXXXXX)
chmod 755 "$WORK"
ROOT="$WORK/root"
mkdir -p "$ROOT" "$WORK/pg" "$WORK/bin"
unxz_to_stdout "$HERE/stack.tar.xz" | tar -C "$ROOT" -x
unxz_to_stdout "$HERE/postgres.tar.xz" | tar -C "$WORK/pg" -x
unxz_once "$HERE/nats-server.xz" "$WORK/bin/nats-server" 755
# The apps find Dawn's binding as node_modules/webgpu above their scripts.
mkdir -p "$ROOT/node_modules"
ln -s "$GPU_PACK/node_modules/webgpu" "$ROOT/node_modules/webgpu"

PG_BIN=$(ls -d "$WORK"/pg/usr/lib/postgresql/*/bin | head -n 1)
DATA="$WORK/data"
pg() {
  if [ "$(id -u)" = 0 ]; then
    LC_ALL=C LD_LIBRARY_PATH="$WORK/pg/lib" runuser -u nobody -- "$PG_BIN/$1" "${@:2}"
  else
    LC_ALL=C LD_LIBRARY_PATH="$WORK/pg/lib" "$PG_BIN/$1" "${@:2}"
  fi
}
mkdir -m 700 "$DATA"
[ "$(id -u)" = 0 ] && chown nobody "$DATA" "$WORK"
PORT=$(node -e "const s=require('node:net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")
pg initdb -D "$DATA" -U trainyard --auth=trust -E UTF8 --locale=C --no-sync >"$WORK/initdb.log"
pg pg_ctl -D "$DATA" -l "$WORK/postgres.log" -o "-p $PORT -k $WORK -c listen_addresses=127.0.0.1 -c max_connections=200" -w -t 60 start >/dev/null
stop() {
  pg pg_ctl -D "$DATA" -m fast -w stop >/dev/null 2>&1 || true
  # What the stack's apps logged, for a run that failed.
  if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then tar -C "$ROOT" -czf "$OUT/gpu-stack-logs.tar.gz" tmp/e2e-logs 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap stop EXIT

export TRAINYARD_ROOT="$ROOT" TEST_DATABASE_URL="postgresql://trainyard@127.0.0.1:$PORT/postgres" PATH="$WORK/bin:$PATH"
backend=(--backend webgpu)
for arg in "$@"; do [ "$arg" = --backend ] && backend=(); done
node "$ROOT/training-jobs-bench.js" "${backend[@]}" "$@"
