-- trajectories supersedes trajectory_logs: those rows were whole packed logs, unbounded and
-- read by no route; logs from now on are kept per trajectory within the retention limits.

-- DropForeignKey
ALTER TABLE "trajectory_logs" DROP CONSTRAINT "trajectory_logs_model_id_fkey";

-- AlterTable
ALTER TABLE "training_jobs" ADD COLUMN     "no_steps_reason" TEXT;

-- DropTable
DROP TABLE "trajectory_logs";

-- CreateTable
CREATE TABLE "trajectories" (
    "id" UUID NOT NULL,
    "seq" BIGSERIAL NOT NULL,
    "model_id" UUID NOT NULL,
    "step" INTEGER NOT NULL,
    "split" TEXT NOT NULL,
    "job_id" UUID,
    "batch_id" UUID NOT NULL,
    "group_index" INTEGER NOT NULL,
    "trajectory_index" INTEGER NOT NULL,
    "reward" DOUBLE PRECISION NOT NULL,
    "bytes" INTEGER NOT NULL,
    "data" JSONB NOT NULL,
    "group_data" JSONB NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "trajectories_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "trajectories_model_id_seq_idx" ON "trajectories"("model_id", "seq");

-- CreateIndex
CREATE INDEX "trajectories_model_id_step_split_idx" ON "trajectories"("model_id", "step", "split");

-- CreateIndex
CREATE INDEX "trajectories_batch_id_idx" ON "trajectories"("batch_id");

-- CreateIndex
CREATE UNIQUE INDEX "trajectories_seq_key" ON "trajectories"("seq");

-- AddForeignKey
ALTER TABLE "trajectories" ADD CONSTRAINT "trajectories_model_id_fkey" FOREIGN KEY ("model_id") REFERENCES "models"("id") ON DELETE CASCADE ON UPDATE CASCADE;

