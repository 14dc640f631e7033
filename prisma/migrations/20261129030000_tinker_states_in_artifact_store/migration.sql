-- AlterTable
ALTER TABLE "tinker_saved_states" ADD COLUMN     "bytes" INTEGER,
ADD COLUMN     "sha256" CHAR(64),
ALTER COLUMN "data" DROP NOT NULL;
