-- CreateTable
CREATE TABLE "published_base_models" (
    "id" TEXT NOT NULL,
    "architecture" TEXT NOT NULL,
    "bundle" CHAR(64) NOT NULL,
    "signature" TEXT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL,
    "published_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "published_base_models_pkey" PRIMARY KEY ("id")
);
