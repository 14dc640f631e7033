# syntax=docker/dockerfile:1
# GPU worker on WebGPU: TensorFlow.js's webgpu backend over Dawn (the `webgpu` package's
# prebuilt dawn.node) and Vulkan. No CUDA in the image and nothing downloaded at install: the
# GPU's Vulkan driver comes from the host. Build from the repository root:
#
#   docker build -f docker/webgpu-worker.Dockerfile -t trainyard-webgpu-worker .
#
# Run with APP=inference-worker or APP=training-worker on a node with the NVIDIA driver and
# container toolkit (Kubernetes: k8s/components/webgpu-workers; compose:
# docker-compose.webgpu.yml). The toolkit mounts the driver's Vulkan ICD (nvidia_icd.json)
# only when the `graphics` driver capability is asked for, hence NVIDIA_DRIVER_CAPABILITIES.
# Without it Dawn finds no adapter, or only a software one: REQUIRE_GPU=true makes the
# worker's /health/ready fail (probe "compute") instead of serving on the CPU.
# That nvidia_icd.json names the driver's GLX library, which in a headless container can fail
# ("Could not get 'vkCreateInstance' via 'vk_icdGetInstanceProcAddr' for ICD
# libGLX_nvidia.so.0"; seen on an H100 with driver 580). The image adds an ICD for the same
# driver's EGL library, which needs no display (nvidia-egl-icd.json, through
# VK_ADD_DRIVER_FILES: added to the loader's own search, not in place of it); where the
# library is absent, as on other vendors' GPUs, the loader skips that ICD.

ARG NODE_IMAGE=node:24-bookworm-slim

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

# ---- production dependencies: the webgpu backend and Dawn's binding are among them ------------
# The webgpu package carries dawn.node for every platform; only this one's is kept.
FROM ${NODE_IMAGE} AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund \
 && platform="$(node -p 'process.platform + "-" + process.arch')" \
 && test -f "node_modules/webgpu/dist/$platform/dawn.node" \
 && find node_modules/webgpu/dist -mindepth 1 -maxdepth 1 ! -name "$platform" -exec rm -rf {} + \
 && test -f node_modules/@tensorflow/tfjs-backend-webgpu/package.json \
 && npm cache clean --force

# ---- runtime: Node 24 with the Vulkan loader ----------------------------------------------------
FROM ${NODE_IMAGE} AS webgpu-worker
RUN apt-get update \
 && apt-get install -y --no-install-recommends tini ca-certificates libvulkan1 \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production \
    APP=inference-worker \
    HTTP_PORT=3105 \
    COMPUTE_BACKEND=webgpu \
    REQUIRE_GPU=true \
    MODELS_DIR=/app/var/models \
    ARTIFACT_ROOT=/app/var/artifacts \
    NVIDIA_VISIBLE_DEVICES=all \
    NVIDIA_DRIVER_CAPABILITIES=compute,utility,graphics \
    VK_ADD_DRIVER_FILES=/usr/share/trainyard/vulkan/nvidia-egl-icd.json \
    XDG_RUNTIME_DIR=/tmp
COPY docker/nvidia-egl-icd.json /usr/share/trainyard/vulkan/nvidia-egl-icd.json
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
