export * from './database-errors';
export * from './db.module';
export * from './packed-json';
export * from './prisma.service';
export * from './generated/prisma/client';
export * from './artifact-references-lock';
