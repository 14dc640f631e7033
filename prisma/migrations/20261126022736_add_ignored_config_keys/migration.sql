-- AlterTable
ALTER TABLE "training_jobs" ADD COLUMN     "ignored_config_keys" TEXT[] DEFAULT ARRAY[]::TEXT[];

