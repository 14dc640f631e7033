-- Stored responses and conversations of the Responses API, owned by the chat service.
-- Items are rows of their own, so that deleting a response or a conversation deletes them.

-- CreateTable
CREATE TABLE "stored_responses" (
    "id" TEXT NOT NULL,
    "entity_id" UUID NOT NULL,
    "body" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "stored_responses_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "response_items" (
    "seq" BIGSERIAL NOT NULL,
    "response_id" TEXT NOT NULL,
    "entity_id" UUID NOT NULL,
    "item_id" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "data" JSONB NOT NULL,

    CONSTRAINT "response_items_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "conversations" (
    "id" TEXT NOT NULL,
    "entity_id" UUID NOT NULL,
    "metadata" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "conversations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "conversation_items" (
    "seq" BIGSERIAL NOT NULL,
    "conversation_id" TEXT NOT NULL,
    "item_id" TEXT NOT NULL,
    "data" JSONB NOT NULL,

    CONSTRAINT "conversation_items_pkey" PRIMARY KEY ("seq")
);

-- CreateIndex
CREATE INDEX "stored_responses_entity_id_created_at_idx" ON "stored_responses"("entity_id", "created_at");

-- CreateIndex
CREATE INDEX "stored_responses_created_at_idx" ON "stored_responses"("created_at");

-- CreateIndex
CREATE INDEX "response_items_response_id_kind_seq_idx" ON "response_items"("response_id", "kind", "seq");

-- CreateIndex
CREATE INDEX "response_items_entity_id_item_id_idx" ON "response_items"("entity_id", "item_id");

-- CreateIndex
CREATE INDEX "conversations_entity_id_idx" ON "conversations"("entity_id");

-- CreateIndex
CREATE INDEX "conversations_updated_at_idx" ON "conversations"("updated_at");

-- CreateIndex
CREATE INDEX "conversation_items_conversation_id_seq_idx" ON "conversation_items"("conversation_id", "seq");

-- CreateIndex
CREATE INDEX "conversation_items_conversation_id_item_id_idx" ON "conversation_items"("conversation_id", "item_id");

-- AddForeignKey
ALTER TABLE "stored_responses" ADD CONSTRAINT "stored_responses_entity_id_fkey" FOREIGN KEY ("entity_id") REFERENCES "entities"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "response_items" ADD CONSTRAINT "response_items_response_id_fkey" FOREIGN KEY ("response_id") REFERENCES "stored_responses"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "conversations" ADD CONSTRAINT "conversations_entity_id_fkey" FOREIGN KEY ("entity_id") REFERENCES "entities"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "conversation_items" ADD CONSTRAINT "conversation_items_conversation_id_fkey" FOREIGN KEY ("conversation_id") REFERENCES "conversations"("id") ON DELETE CASCADE ON UPDATE CASCADE;

