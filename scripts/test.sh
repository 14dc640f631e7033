#!/usr/bin/env bash
# npm test: installs what is missing, makes sure PostgreSQL, nats-server, Chromium (for the
# console's browser tests) and a software Vulkan driver (for the engine's webgpu tests) are
# there (tests start their own nats-servers and make their own databases), then runs every
# check and every test. The last line is "N passed, N failed"
# over all tests that ran.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"

RESULTS=tmp/jest-results.json
mkdir -p tmp
rm -f "$RESULTS"
checks_failed=()

summary() {
  local passed=0 failed=0
  if [ -s "$RESULTS" ]; then
    read -r passed failed < <(node -e "const r=require('./$RESULTS');console.log(r.numPassedTests, r.numFailedTests + r.numRuntimeErrorTestSuites)")
  fi
  [ ${#checks_failed[@]} -eq 0 ] || echo "failed checks: ${checks_failed[*]}"
  echo "$passed passed, $((failed + ${#checks_failed[@]})) failed"
}
trap summary EXIT

check() {
  local name=$1; shift
  say "$name"
  "$@" || checks_failed+=("$name")
}

ensure_node
ensure_node_modules
ensure_nats_binary
ensure_chromium
ensure_vulkan
ensure_tinker_sdk
ensure_postgres postgres
export TEST_DATABASE_URL="$DATABASE_URL"
generate_prisma_client
generate_engine_kernels

# The template every test database is cloned from is remade from the migrations each run.
template_url=$(node -e "const u=new URL(process.env.TEST_DATABASE_URL);u.pathname='/'+(process.env.TEST_DATABASE_TEMPLATE||'trainyard_test_template');console.log(u.toString())")
node scripts/db.mjs drop-db "$template_url"
node scripts/db.mjs create-db "$template_url"
node scripts/db.mjs migrate "$template_url" >/dev/null

check "schema.prisma agrees with prisma/migrations" node scripts/db.mjs check
check "lint (module boundaries included)" npx nx run-many -t lint --outputStyle=static
check "typecheck" npx tsc -p tsconfig.typecheck.json
check "npm audit: no high or critical advisory in production dependencies" node scripts/audit-prod.mjs
check "build" build_apps

say "tests"
npx jest --ci --maxWorkers=2 --json --outputFile="$RESULTS" "$@" || true
[ -s "$RESULTS" ] || checks_failed+=("jest did not report")
node -e "const r=require('./$RESULTS'); process.exit(r.success ? 0 : 1)" 2>/dev/null && [ ${#checks_failed[@]} -eq 0 ]
