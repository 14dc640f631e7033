#!/usr/bin/env bash
# npm start: installs what is missing, brings up PostgreSQL and NATS (or uses DATABASE_URL
# and NATS_URL), applies migrations, generates the engine's kernels, builds, makes a
# development API key if none exists yet, and runs every app until Ctrl-C (the registry
# writes the embedded default model, var/models/trainyard/tiny-chat, on its first start).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

ensure_node
ensure_node_modules
ensure_postgres trainyard
ensure_nats
generate_prisma_client
generate_engine_kernels
node scripts/db.mjs create-db
node scripts/db.mjs migrate
build_apps

mkdir -p var
if [ ! -s var/dev-api-key ]; then
  say "creating a development API key (entity \"dev\")"
  node dist/apps/gateway/keys.js create --entity dev --name "development key" --json \
    | node -e "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(JSON.parse(s).key))" > var/dev-api-key
  chmod 600 var/dev-api-key
fi

# The gateway's port as run-all.mjs will give it: stack.json's, plus PORT_OFFSET.
PORT=$(node -e "console.log(require('./scripts/stack.json').apps.find(a => a.name === 'gateway').port + Number(process.env.PORT_OFFSET || 0))")
cat <<BANNER

  Trainyard is starting.
    base URL:  http://127.0.0.1:$PORT/v1
    console:   http://127.0.0.1:$PORT/console/   (sign in with the key below)
    API key:   $(cat var/dev-api-key)   (kept in var/dev-api-key)
    check:     curl http://127.0.0.1:$PORT/v1/system-check

BANNER
exec node scripts/run-all.mjs
