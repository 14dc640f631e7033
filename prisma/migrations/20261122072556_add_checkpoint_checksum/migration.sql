-- AlterTable
ALTER TABLE "checkpoints" ADD COLUMN     "adapter_sha256" TEXT NOT NULL;

