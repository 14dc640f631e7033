-- CreateEnum
CREATE TYPE "TinkerFutureStatus" AS ENUM ('queued', 'running', 'succeeded', 'failed');

-- CreateTable
CREATE TABLE "tinker_sessions" (
    "id" UUID NOT NULL,
    "entity_id" UUID NOT NULL,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "user_metadata" JSONB NOT NULL DEFAULT '{}',
    "sdk_version" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_heartbeat_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tinker_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tinker_training_clients" (
    "id" TEXT NOT NULL,
    "session_id" UUID NOT NULL,
    "entity_id" UUID NOT NULL,
    "model_id" UUID NOT NULL,
    "base_model" TEXT NOT NULL,
    "lora_config" JSONB NOT NULL,
    "applied_seq" INTEGER NOT NULL DEFAULT 0,
    "worker" TEXT,
    "worker_seen_at" TIMESTAMPTZ(3),
    "lost_reason" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tinker_training_clients_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "tinker_futures" (
    "id" UUID NOT NULL,
    "entity_id" UUID NOT NULL,
    "client_id" TEXT,
    "kind" TEXT NOT NULL,
    "seq_id" INTEGER,
    "status" "TinkerFutureStatus" NOT NULL DEFAULT 'queued',
    "request" JSONB,
    "result" JSONB,
    "error" TEXT,
    "error_category" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "completed_at" TIMESTAMPTZ(3),

    CONSTRAINT "tinker_futures_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "tinker_sessions_entity_id_created_at_idx" ON "tinker_sessions"("entity_id", "created_at");

-- CreateIndex
CREATE INDEX "tinker_training_clients_entity_id_idx" ON "tinker_training_clients"("entity_id");

-- CreateIndex
CREATE INDEX "tinker_futures_status_created_at_idx" ON "tinker_futures"("status", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "tinker_futures_client_id_seq_id_key" ON "tinker_futures"("client_id", "seq_id");

-- AddForeignKey
ALTER TABLE "tinker_sessions" ADD CONSTRAINT "tinker_sessions_entity_id_fkey" FOREIGN KEY ("entity_id") REFERENCES "entities"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tinker_training_clients" ADD CONSTRAINT "tinker_training_clients_session_id_fkey" FOREIGN KEY ("session_id") REFERENCES "tinker_sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tinker_training_clients" ADD CONSTRAINT "tinker_training_clients_model_id_fkey" FOREIGN KEY ("model_id") REFERENCES "models"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "tinker_futures" ADD CONSTRAINT "tinker_futures_client_id_fkey" FOREIGN KEY ("client_id") REFERENCES "tinker_training_clients"("id") ON DELETE CASCADE ON UPDATE CASCADE;

