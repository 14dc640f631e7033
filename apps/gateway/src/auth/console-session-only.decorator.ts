import { SetMetadata } from '@nestjs/common';

export const CONSOLE_SESSION_ONLY = 'trainyard:console-session-only';

/** Routes of the console itself (its session, key management): a bearer key is not enough, a signed-in session is needed. */
export const ConsoleSessionOnly = () => SetMetadata(CONSOLE_SESSION_ONLY, true);
