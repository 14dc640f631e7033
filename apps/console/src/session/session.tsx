import { createContext, ReactNode, useCallback, useContext, useEffect, useMemo, useState } from 'react';
import { ApiError, consoleApi, onSessionLost, setCsrfToken } from '../api/client';
import type { ConsoleSessionView } from '../api/types';

export type SessionState =
  | { status: 'loading' }
  | { status: 'signed-out'; notice?: string }
  | { status: 'signed-in'; entity: string; keyId: string; expiresAt: string };

interface SessionContextValue {
  state: SessionState;
  signIn(key: string): Promise<void>;
  signOut(): Promise<void>;
}

const SessionContext = createContext<SessionContextValue | null>(null);

/** Who is signed in. The session itself is the httpOnly cookie; this only mirrors what the service says. */
export function SessionProvider({ children }: { children: ReactNode }) {
  const [state, setState] = useState<SessionState>({ status: 'loading' });

  const adopt = useCallback((session: ConsoleSessionView) => {
    setCsrfToken(session.csrf_token);
    setState({ status: 'signed-in', entity: session.entity, keyId: session.key_id, expiresAt: session.expires_at });
  }, []);

  const end = useCallback((notice?: string) => {
    setCsrfToken(undefined);
    setState({ status: 'signed-out', notice });
  }, []);

  useEffect(() => {
    onSessionLost(() => end('Your session has ended: sign in again.'));
    consoleApi<ConsoleSessionView>('GET', 'session').then(adopt, (err: unknown) =>
      end(err instanceof ApiError && err.status === 401 ? undefined : `The service did not answer: ${(err as Error).message}`),
    );
  }, [adopt, end]);

  const value = useMemo<SessionContextValue>(
    () => ({
      state,
      signIn: async (key) => adopt(await consoleApi<ConsoleSessionView>('POST', 'session', { key })),
      signOut: async () => {
        await consoleApi('DELETE', 'session').catch(() => undefined);
        end();
      },
    }),
    [state, adopt, end],
  );
  return <SessionContext.Provider value={value}>{children}</SessionContext.Provider>;
}

export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside SessionProvider');
  return value;
}
