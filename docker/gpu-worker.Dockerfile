# syntax=docker/dockerfile:1
# GPU worker: TensorFlow.js on CUDA through @tensorflow/tfjs-node-gpu 4.22, which needs
# CUDA 11.2-11.8 and cuDNN 8. Build where the internet is reachable (its install script
# downloads libtensorflow 2.9.1), from the repository root:
#
#   docker build -f docker/gpu-worker.Dockerfile -t trainyard-gpu-worker .
#
# Run with APP=inference-worker or APP=training-worker on a node with the NVIDIA driver and
# container toolkit (Kubernetes: nvidia.com/gpu; compose: docker-compose.gpu.yml). Without
# cuDNN, tfjs-node-gpu silently computes on the CPU: REQUIRE_GPU=true makes the worker's
# /health/ready fail (probe "compute") instead, so it never takes work on the wrong device.

ARG NODE_IMAGE=node:24-bookworm-slim
ARG CUDA_IMAGE=nvidia/cuda:11.8.0-cudnn8-runtime-ubuntu22.04

# ---- build the two workers with Nx -----------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# Exactly the locked versions. Optional dependencies stay in: Nx and esbuild need them to build.
RUN npm ci --no-audit --no-fund
COPY . .
RUN PRISMA_SCHEMA_ENGINE_BINARY="$(command -v node)" npx prisma generate \
 && node scripts/build-kernels.mjs \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run-many -t build -p inference-worker,training-worker --outputStyle=static \
 && npx tsx libs/engine/src/cli/make-model.ts --preset tiny --seed 0 --out /app/var/models/trainyard/tiny-chat

# ---- production dependencies plus tfjs-node-gpu ------------------------------------------------
FROM ${NODE_IMAGE} AS prod-deps
# Only used if no prebuilt binding matches and node-gyp has to compile it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund
# Named explicitly, a failed download fails the build (as an optional dependency npm would
# quietly drop it). The binding and libtensorflow must both be there afterwards.
RUN npm install --no-save --omit=dev --no-audit --no-fund --foreground-scripts @tensorflow/tfjs-node-gpu@4.22.0 \
 && test -n "$(find node_modules/@tensorflow/tfjs-node-gpu/lib -name tfjs_binding.node)" \
 && test -n "$(find node_modules/@tensorflow/tfjs-node-gpu/deps/lib -name 'libtensorflow.so*')" \
 && npm cache clean --force

# ---- runtime: CUDA 11.8 + cuDNN 8, with Node 24 copied from the official image ------------------
FROM ${NODE_IMAGE} AS node
FROM ${CUDA_IMAGE} AS gpu-worker
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 1000 node \
 && useradd --uid 1000 --gid node --shell /bin/sh --create-home node
COPY --from=node /usr/local/bin/node /usr/local/bin/node
WORKDIR /app
ENV NODE_ENV=production \
    APP=inference-worker \
    HTTP_PORT=3105 \
    COMPUTE_BACKEND=tensorflow \
    REQUIRE_GPU=true \
    MODELS_DIR=/app/var/models \
    ARTIFACT_ROOT=/app/var/artifacts \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility \
    TF_CPP_MIN_LOG_LEVEL=1
COPY --from=prod-deps /app/node_modules ./node_modules
COPY package.json ./
COPY --from=build /app/dist/apps/inference-worker ./dist/apps/inference-worker
COPY --from=build /app/dist/apps/training-worker ./dist/apps/training-worker
COPY --from=build --chown=node:node /app/var/models ./var/models
RUN mkdir -p var/artifacts && chown node:node var var/artifacts
USER node
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.HTTP_PORT+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["sh", "-c", "exec node dist/apps/$APP/main.js"]
