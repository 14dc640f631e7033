-- AlterTable
ALTER TABLE "training_jobs" ADD COLUMN     "attempts" INTEGER NOT NULL DEFAULT 0;

-- Jobs started before attempts were counted ran at least once.
UPDATE "training_jobs" SET "attempts" = 1 WHERE "training_start" IS NOT NULL;
