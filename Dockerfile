# syntax=docker/dockerfile:1
# Images of the Node services and of the CPU (wasm) workers; the GPU worker image is
# docker/gpu-worker.Dockerfile. Build context is the repository root.
#
#   docker build -t trainyard .                               every service; APP picks one
#   docker build --target cpu-worker -t trainyard-cpu-worker .  inference/training worker on wasm
#
# The process to run is chosen with APP (gateway, chat, model-registry, training-orchestrator,
# health, inference-worker, training-worker); its health endpoints are on HTTP_PORT. The web
# console is built with the rest (dist/apps/console) and served by the gateway under /console.

ARG NODE_IMAGE=node:24-bookworm-slim

# ---- all dependencies, for the build --------------------------------------------------------
FROM ${NODE_IMAGE} AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the locked versions. Optional dependencies stay in: Nx and esbuild (tsx) need their
# platform binaries to build.
RUN npm ci --no-audit --no-fund

# ---- build every app with Nx, and the embedded default model ---------------------------------
FROM deps AS build
COPY . .
# Prisma's generate needs no engine but insists on finding one: any file satisfies it. The
# engine's WebAssembly kernels are compiled from libs/engine/assembly (never committed).
RUN PRISMA_SCHEMA_ENGINE_BINARY="$(command -v node)" npx prisma generate \
 && node scripts/build-kernels.mjs \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run-many -t build --outputStyle=static \
 && npx tsx libs/engine/src/cli/make-model.ts --preset tiny --seed 0 --out /app/var/models/trainyard/tiny-chat

# ---- production dependencies only ---------------------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force

# ---- what every runtime image shares --------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
# tini is PID 1: it forwards SIGTERM to node (which exits 0 after a clean shutdown) and reaps zombies.
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    MODELS_DIR=/app/var/models \
    ARTIFACT_ROOT=/app/var/artifacts
COPY --from=prod-deps --chown=root:root /app/node_modules ./node_modules
COPY --chown=root:root package.json ./
COPY --from=build --chown=root:root /app/dist ./dist
COPY --chown=root:root prisma ./prisma
COPY --chown=root:root scripts/db.mjs ./scripts/db.mjs
# The models dir holds the embedded default model; both var dirs are usually volumes.
COPY --from=build --chown=node:node /app/var/models ./var/models
RUN mkdir -p var/artifacts && chown node:node var var/artifacts
# The image's own user (uid 1000), never root; code and dependencies stay read-only to it.
USER node
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.HTTP_PORT+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["sh", "-c", "exec node dist/apps/$APP/main.js"]

# ---- CPU worker: TensorFlow.js on wasm (one thread, SIMD; 4 GB heap) ------------------------
FROM runtime AS cpu-worker
ENV APP=inference-worker \
    HTTP_PORT=3105 \
    COMPUTE_BACKEND=wasm \
    REQUIRE_GPU=false

# ---- the services (default target) --------------------------------------------------------------
FROM runtime AS service
ENV APP=gateway \
    HTTP_PORT=8080
EXPOSE 8080
