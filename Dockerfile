# syntax=docker/dockerfile:1
# One image for every Node service of the stack (and the CPU/wasm workers); the app to run
# is chosen with APP. The GPU worker image comes with the deployment work (docker/gpu-worker).

FROM node:20.20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund

FROM deps AS build
COPY . .
# Prisma's generate needs no engine, but insists on finding one: any file satisfies it.
RUN PRISMA_SCHEMA_ENGINE_BINARY="$(command -v node)" npx prisma generate \
 && NX_DAEMON=false NX_NO_CLOUD=true npx nx run-many -t build --outputStyle=static \
 && npx tsx libs/engine/src/cli/make-model.ts --preset tiny --seed 0 --out /app/var/models/trainyard/tiny-chat

FROM node:20.20-bookworm-slim AS runtime
RUN apt-get update && apt-get install -y --no-install-recommends tini && rm -rf /var/lib/apt/lists/*
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --omit=optional --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY --from=build /app/var/models ./var/models
COPY prisma ./prisma
COPY scripts/db.mjs ./scripts/db.mjs
RUN mkdir -p var/artifacts && chown -R node:node var
USER node
ENV APP=gateway HTTP_PORT=8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+process.env.HTTP_PORT+'/health/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
CMD ["sh", "-c", "exec node dist/apps/$APP/main.js"]
