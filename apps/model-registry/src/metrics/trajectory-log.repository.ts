import { Injectable } from '@nestjs/common';
import { packJson, PrismaService } from '@trainyard/db';

@Injectable()
export class TrajectoryLogRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Keeps the groups and merges the metrics into the checkpoint in one transaction. The
   * merge is done by Postgres (jsonb ||), so concurrent logs of two splits both land and
   * keys already there (train/ next to val/) are kept.
   */
  async record(
    checkpoint: { id: string; modelId: string; step: number },
    split: string,
    groups: unknown,
    metrics: Record<string, number>,
  ): Promise<void> {
    await this.prisma.$transaction([
      this.prisma.trajectoryLog.create({
        data: { modelId: checkpoint.modelId, step: checkpoint.step, split, groups: packJson(groups) as object },
      }),
      this.prisma.$executeRaw`UPDATE checkpoints SET metrics = metrics || ${JSON.stringify(metrics)}::jsonb WHERE id = ${checkpoint.id}::uuid`,
    ]);
  }
}
