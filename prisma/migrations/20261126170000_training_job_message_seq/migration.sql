-- AlterTable
ALTER TABLE "training_jobs" ADD COLUMN     "message_seq" BIGINT;
