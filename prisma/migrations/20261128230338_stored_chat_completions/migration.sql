-- Stored chat completions (store: true), owned by the chat service, and what stored responses
-- need to be exported as training data: their model, metadata (plain jsonb, filtered on),
-- the tokens that were served, and an order to page them by.

-- AlterTable
ALTER TABLE "stored_responses" ADD COLUMN     "metadata" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN     "model" TEXT,
ADD COLUMN     "seq" BIGSERIAL NOT NULL,
ADD COLUMN     "trace" JSONB;

-- CreateTable
CREATE TABLE "stored_chat_completions" (
    "id" TEXT NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "entity_id" UUID NOT NULL,
    "model" TEXT NOT NULL,
    "metadata" JSONB NOT NULL DEFAULT '{}',
    "body" JSONB NOT NULL,
    "trace" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stored_chat_completions_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "stored_chat_completions_seq_key" ON "stored_chat_completions"("seq");

-- CreateIndex
CREATE INDEX "stored_chat_completions_entity_id_seq_idx" ON "stored_chat_completions"("entity_id", "seq");

-- CreateIndex
CREATE INDEX "stored_chat_completions_created_at_idx" ON "stored_chat_completions"("created_at");

-- CreateIndex
CREATE UNIQUE INDEX "stored_responses_seq_key" ON "stored_responses"("seq");

-- AddForeignKey
ALTER TABLE "stored_chat_completions" ADD CONSTRAINT "stored_chat_completions_entity_id_fkey" FOREIGN KEY ("entity_id") REFERENCES "entities"("id") ON DELETE CASCADE ON UPDATE CASCADE;

