import { Anchor, AnchorProps } from '@mantine/core';
import { MouseEvent, ReactNode, useSyncExternalStore } from 'react';

// A router the size of the console: paths below the console's mount point, history.pushState,
// and a Link that navigates in place. Nothing secret ever goes into a path.

const basePath = new URL('.', document.baseURI).pathname;
const listeners = new Set<() => void>();

window.addEventListener('popstate', () => listeners.forEach((l) => l()));

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The path inside the console, e.g. "/jobs/123". */
function currentPath(): string {
  const path = window.location.pathname;
  return path.startsWith(basePath) ? `/${path.slice(basePath.length)}` : '/';
}

export function usePath(): string {
  return useSyncExternalStore(subscribe, currentPath);
}

export function hrefOf(to: string): string {
  return basePath + to.replace(/^\//, '');
}

export function navigate(to: string, { replace = false } = {}): void {
  if (replace) window.history.replaceState(null, '', hrefOf(to));
  else window.history.pushState(null, '', hrefOf(to));
  listeners.forEach((l) => l());
}

export function Link({ to, children, ...props }: AnchorProps & { to: string; children: ReactNode }) {
  const onClick = (event: MouseEvent<HTMLAnchorElement>) => {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    navigate(to);
  };
  return (
    <Anchor href={hrefOf(to)} onClick={onClick} {...props}>
      {children}
    </Anchor>
  );
}

/** Matches "/models/:id"-style patterns; the params, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const names = [...pattern.matchAll(/:(\w+)/g)].map((m) => m[1]);
  const regex = new RegExp(`^${pattern.replace(/:\w+/g, '([^/]+)')}/?$`);
  const found = regex.exec(path);
  return found ? Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(found[i + 1])])) : null;
}
