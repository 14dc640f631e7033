import { DependencyList, useCallback, useEffect, useRef, useState } from 'react';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload(): void;
}

/** Runs a loader now and whenever `deps` change; the latest answer wins. */
export function useLoad<T>(load: () => Promise<T>, deps: DependencyList): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<string>();
  const [loading, setLoading] = useState(true);
  const run = useRef(0);
  const stableLoad = useCallback(load, deps);

  const reload = useCallback(() => {
    const id = ++run.current;
    setLoading(true);
    stableLoad().then(
      (value) => {
        if (id !== run.current) return;
        setData(value);
        setError(undefined);
        setLoading(false);
      },
      (err: Error) => {
        if (id !== run.current) return;
        setError(err.message);
        setLoading(false);
      },
    );
  }, [stableLoad]);

  useEffect(reload, [reload]);
  return { data, error, loading, reload };
}
