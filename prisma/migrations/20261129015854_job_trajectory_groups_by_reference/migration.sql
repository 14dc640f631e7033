-- An RL job's trajectory groups are stored once, as one object in the artifact store: its kept
-- trajectories name that object (object_sha256) instead of holding their JSON, and
-- job_trajectory_groups holds it for the job until the job has ended. Rows kept before keep
-- their JSON inline (data, group_data) and read as they did.

-- AlterTable
ALTER TABLE "trajectories" ADD COLUMN     "object_sha256" TEXT,
ALTER COLUMN "data" DROP NOT NULL,
ALTER COLUMN "group_data" DROP NOT NULL;

-- CreateTable
CREATE TABLE "job_trajectory_groups" (
    "job_id" UUID NOT NULL,
    "model_id" UUID NOT NULL,
    "sha256" TEXT NOT NULL,
    "bytes" INTEGER NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "job_trajectory_groups_pkey" PRIMARY KEY ("job_id")
);

-- CreateIndex
CREATE INDEX "job_trajectory_groups_model_id_idx" ON "job_trajectory_groups"("model_id");

-- AddForeignKey
ALTER TABLE "job_trajectory_groups" ADD CONSTRAINT "job_trajectory_groups_model_id_fkey" FOREIGN KEY ("model_id") REFERENCES "models"("id") ON DELETE CASCADE ON UPDATE CASCADE;

