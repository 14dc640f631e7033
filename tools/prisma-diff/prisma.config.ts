import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';

// The JS schema engine connects through an adapter even for `migrate diff` between two
// datamodels; it only reads from that database. scripts/db.mjs passes a reachable one.
export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  async adapter() {
    return new PrismaPg({ connectionString: process.env.PRISMA_DIFF_DATABASE_URL });
  },
});
