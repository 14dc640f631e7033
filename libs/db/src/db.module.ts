import { DynamicModule, Global, Injectable, Module, OnModuleInit } from '@nestjs/common';
import { APP_INTERCEPTOR } from '@nestjs/core';
import { ReadinessService } from '@trainyard/runtime';
import { DatabaseErrorsInterceptor } from './database-errors';
import { DATABASE_URL, PrismaService } from './prisma.service';

@Injectable()
class DatabaseReadiness implements OnModuleInit {
  constructor(
    private readonly readiness: ReadinessService,
    private readonly prisma: PrismaService,
  ) {}

  onModuleInit(): void {
    this.readiness.register('database', () => this.prisma.ping());
  }
}

/** For the services that own tables; everybody else asks them over NATS. */
@Global()
@Module({})
export class DbModule {
  static forRoot(databaseUrl: string): DynamicModule {
    return {
      module: DbModule,
      providers: [
        { provide: DATABASE_URL, useValue: databaseUrl },
        PrismaService,
        DatabaseReadiness,
        { provide: APP_INTERCEPTOR, useClass: DatabaseErrorsInterceptor },
      ],
      exports: [PrismaService],
    };
  }
}
