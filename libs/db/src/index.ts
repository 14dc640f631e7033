export * from './db.module';
export * from './prisma.service';
export * from './generated/prisma/client';
