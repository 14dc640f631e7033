import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode, ServiceError } from '@trainyard/contracts';
import { GatewayConfig } from '../config/gateway.config';
import { ApiKeysService } from './api-keys.service';
import type { Caller } from './caller';
import { csrfTokenFor, csrfTokenMatches, CSRF_HEADER, generateSessionToken, hashSessionToken, isSafeMethod } from './console-session.token';
import { ConsoleSessionsRepository, StoredSession } from './console-sessions.repository';

export interface SessionView {
  entityName: string;
  /** The key the session signed in with. */
  apiKeyId: string;
  csrfToken: string;
  expiresAt: Date;
}

export interface SignedIn extends SessionView {
  /** Goes into the httpOnly cookie and nowhere else. */
  token: string;
}

/** Console sign-in: a key is exchanged for a server-side session held in an httpOnly cookie. */
@Injectable()
export class ConsoleSessionsService {
  private readonly logger = new Logger(ConsoleSessionsService.name);

  constructor(
    private readonly apiKeys: ApiKeysService,
    private readonly sessions: ConsoleSessionsRepository,
    @Inject(GatewayConfig) private readonly config: GatewayConfig,
  ) {}

  async signIn(secret: string): Promise<SignedIn> {
    const caller = await this.apiKeys.verify(secret.trim());
    const { token, hash } = generateSessionToken();
    const now = new Date();
    const expiresAt = new Date(now.getTime() + this.config.CONSOLE_SESSION_TTL_SECONDS * 1000);
    await this.sessions.create(caller.apiKeyId, hash, expiresAt);
    // Expired sessions are swept here, where sessions are made, rather than by a timer.
    this.sessions.deleteExpired(now).catch((err: Error) => this.logger.warn(`Could not sweep expired console sessions: ${err.message}`));
    return { token, csrfToken: csrfTokenFor(token), entityName: caller.entityName, apiKeyId: caller.apiKeyId, expiresAt };
  }

  /** The caller a session cookie stands for; a request that changes something must also prove it came from the console. */
  async authenticate(token: string | undefined, request: { method: string; csrfToken: string | undefined }): Promise<Caller> {
    const session = await this.live(token);
    if (!isSafeMethod(request.method) && !csrfTokenMatches(token as string, request.csrfToken)) {
      throw new ServiceError(ErrorCode.Forbidden, `Missing or wrong ${CSRF_HEADER} header: send the token the console got at sign-in`);
    }
    return { entityId: session.entityId, entityName: session.entityName, apiKeyId: session.apiKeyId, sessionId: session.id };
  }

  /** What the console needs after a page load: who is signed in and the CSRF token, which it keeps in memory only. */
  async describe(token: string | undefined): Promise<SessionView> {
    const session = await this.live(token);
    return { entityName: session.entityName, apiKeyId: session.apiKeyId, csrfToken: csrfTokenFor(token as string), expiresAt: session.expiresAt };
  }

  async signOut(sessionId: string): Promise<void> {
    await this.sessions.delete(sessionId);
  }

  private async live(token: string | undefined): Promise<StoredSession> {
    if (!token) throw new ServiceError(ErrorCode.Unauthorized, 'Not signed in to the console');
    const session = await this.sessions.findLive(hashSessionToken(token), new Date());
    if (!session) throw new ServiceError(ErrorCode.Unauthorized, 'The console session has ended: sign in again');
    return session;
  }
}
