-- AlterTable
ALTER TABLE "training_jobs" ADD COLUMN     "fine_tuning" JSONB,
ADD COLUMN     "trained_tokens" INTEGER;
