-- CreateTable
CREATE TABLE "tinker_saved_states" (
    "id" UUID NOT NULL,
    "entity_id" UUID NOT NULL,
    "path" TEXT NOT NULL,
    "client_id" TEXT NOT NULL,
    "base_model" TEXT NOT NULL,
    "lora_config" JSONB NOT NULL,
    "data" BYTEA NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "tinker_saved_states_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "tinker_saved_states_entity_id_path_key" ON "tinker_saved_states"("entity_id", "path");

-- AddForeignKey
ALTER TABLE "tinker_saved_states" ADD CONSTRAINT "tinker_saved_states_entity_id_fkey" FOREIGN KEY ("entity_id") REFERENCES "entities"("id") ON DELETE CASCADE ON UPDATE CASCADE;

