import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'trainyard:public';

/** Marks a route that needs no API key (health and system-check only). */
export const Public = () => SetMetadata(IS_PUBLIC, true);
