import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { Pool } from 'pg';
import { HealthConfig } from './config/health.config';

/** A one-connection pool that only ever runs SELECT 1. */
@Injectable()
export class DatabaseProbe implements OnModuleDestroy {
  private readonly pool: Pool;

  constructor(@Inject(HealthConfig) config: HealthConfig) {
    this.pool = new Pool({ connectionString: config.DATABASE_URL, max: 1, connectionTimeoutMillis: config.CHECK_TIMEOUT_MS });
    // An idle client losing its server must not crash the process; the next probe reports it.
    this.pool.on('error', () => undefined);
  }

  async ping(): Promise<void> {
    await this.pool.query('SELECT 1');
  }

  async onModuleDestroy(): Promise<void> {
    await this.pool.end();
  }
}
