#!/usr/bin/env bash
# Writes a folder (default tmp/gpu-stack) that runs tools/bench/training-jobs.bench.ts, an ART
# RL job through the whole stack, on a GPU machine with webgpu workers: every app of dist/apps
# and the bench bundled with their dependencies, the database tool and migrations
# (stack.tar.xz), this machine's PostgreSQL server with the libraries it links beyond glibc
# (postgres.tar.xz), its nats-server (nats-server.xz), and run-stack.sh. It carries no Node.js
# and no Dawn: run-stack.sh takes both from the GPU pack (tools/bench/gpu/pack.sh) beside it,
# with which it travels under the device tool's 64 MiB (draw.sh runs both). About 27 MB.
#
#   bash tools/bench/gpu/pack-stack.sh [OUT]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
OUT="$(realpath -m "${1:-$ROOT/tmp/gpu-stack}")"
cd "$ROOT"
# shellcheck source=../../../scripts/lib/common.sh
source scripts/lib/common.sh
ensure_node
ensure_nats_binary
generate_prisma_client
generate_engine_kernels
build_apps
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
[ -x "$PG_BIN/initdb" ] || die "no PostgreSQL server here (npm test installs it)"
rm -rf "$OUT"
mkdir -p "$OUT"
TREE=$(mktemp -d)
trap 'rm -rf "$TREE"' EXIT

# The tree the stack runs (TRAINYARD_ROOT): each app's scripts as dist/apps has them, re-bundled
# with their node_modules, which dist/apps keeps external. Nest's optional transports and
# websockets are required only when used; Dawn's binding is found at run time.
node - "$TREE" <<'JS'
const esbuild = require(require.resolve('esbuild', { paths: [require.resolve('tsx')] }));
const { existsSync, readdirSync, copyFileSync, mkdirSync } = require('node:fs');
const { join } = require('node:path');
const tree = process.argv[2];
const common = { bundle: true, platform: 'node', target: 'node24', logLevel: 'error' };
const external = ['@nestjs/websockets', '@nestjs/websockets/*', '@grpc/grpc-js', '@grpc/proto-loader', 'kafkajs', 'mqtt', 'ioredis', 'amqplib', 'amqp-connection-manager', '@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'];
const wasm = 'node_modules/@tensorflow/tfjs-backend-wasm/dist';
for (const app of readdirSync('dist/apps')) {
  if (!existsSync(join('dist/apps', app, 'main.js')) || app === 'console') continue;
  for (const script of ['main.js', 'keys.js', 'matmul-threads.worker.js']) {
    const from = join('dist/apps', app, script);
    if (existsSync(from)) esbuild.buildSync({ ...common, format: 'cjs', entryPoints: [from], outfile: join(tree, 'dist/apps', app, script), external });
  }
  // tfjs's wasm backend looks for its binaries beside the script that holds it.
  if (existsSync(join('dist/apps', app, 'matmul-threads.worker.js'))) {
    for (const file of readdirSync(wasm).filter((f) => f.endsWith('.wasm'))) copyFileSync(join(wasm, file), join(tree, 'dist/apps', app, file));
  }
}
esbuild.buildSync({ ...common, format: 'cjs', entryPoints: ['tools/bench/training-jobs.bench.ts'], outfile: join(tree, 'training-jobs-bench.js'), tsconfig: 'tsconfig.base.json', external });
// db.mjs stays a module; pg inside it requires Node's built-ins.
esbuild.buildSync({
  ...common,
  format: 'esm',
  entryPoints: ['scripts/db.mjs'],
  outfile: join(tree, 'scripts/db.mjs'),
  banner: { js: "import { createRequire } from 'node:module'; const require = createRequire(import.meta.url);" },
});
mkdirSync(join(tree, 'prisma'), { recursive: true });
JS
cp scripts/stack.json "$TREE/scripts/"
cp -r prisma/migrations "$TREE/prisma/"
tar -C "$TREE" -cf - . | xz -T0 -9 >"$OUT/stack.tar.xz"

# PostgreSQL as Debian lays it out (its binaries find share/ and lib/ relative to themselves),
# with the libraries the server links beyond glibc and the C++ runtime in lib/.
PG="$TREE/pg"
PG_ROOT="$(dirname "$PG_BIN")"
PG_SHARE="/usr/share/postgresql/$(basename "$PG_ROOT")"
mkdir -p "$PG$PG_BIN" "$PG$PG_ROOT/lib" "$PG$(dirname "$PG_SHARE")" "$PG/lib"
cp "$PG_BIN"/{postgres,initdb,pg_ctl} "$PG$PG_BIN/"
find "$PG_ROOT/lib" -maxdepth 1 -name '*.so' ! -name 'llvmjit*' -exec cp {} "$PG$PG_ROOT/lib/" \;
cp -r "$PG_SHARE" "$PG$(dirname "$PG_SHARE")/"
ldd "$PG_BIN/postgres" | awk '$3 ~ /^\// { print $3 }' | grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so' | xargs -I{} cp -L {} "$PG/lib/"
tar -C "$PG" -cf - . | xz -T0 -9 >"$OUT/postgres.tar.xz"
xz -T0 -9 -c "$(command -v nats-server)" >"$OUT/nats-server.xz"
cp tools/bench/gpu/run-stack.sh "$OUT/"
du -sh "$OUT"
