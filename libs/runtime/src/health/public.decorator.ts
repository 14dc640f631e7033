import { SetMetadata } from '@nestjs/common';

export const IS_PUBLIC = 'trainyard:public';

/**
 * Marks a route that needs no API key: process probes and the API's health routes.
 * Declared here, beside the probes, so that the gateway's guard and every app agree.
 */
export const Public = () => SetMetadata(IS_PUBLIC, true);
