import { AppShell, Badge, Button, Center, Group, Loader, NavLink, Text, Title } from '@mantine/core';
import { MouseEvent, ReactNode } from 'react';
import { JobPage } from './pages/job.page';
import { JobsPage } from './pages/jobs.page';
import { KeysPage } from './pages/keys.page';
import { ModelPage } from './pages/model.page';
import { ModelsPage } from './pages/models.page';
import { PlaygroundPage } from './pages/playground.page';
import { SignInPage } from './pages/sign-in.page';
import { hrefOf, match, navigate, usePath } from './router';
import { useSession } from './session/session';

const SECTIONS = [
  { to: '/models', label: 'Models' },
  { to: '/jobs', label: 'Training jobs' },
  { to: '/playground', label: 'Playground' },
  { to: '/settings/keys', label: 'Account settings' },
];

export function App() {
  const { state } = useSession();
  if (state.status === 'loading') {
    return (
      <Center mih="100vh">
        <Loader />
      </Center>
    );
  }
  if (state.status === 'signed-out') return <SignInPage notice={state.notice} />;
  return <Shell entity={state.entity} />;
}

function Shell({ entity }: { entity: string }) {
  const { signOut } = useSession();
  const path = usePath();
  const go = (to: string) => (event: MouseEvent) => {
    event.preventDefault();
    navigate(to);
  };
  return (
    <AppShell header={{ height: 56 }} navbar={{ width: 220, breakpoint: 'sm' }} padding="lg">
      <AppShell.Header>
        <Group h="100%" px="lg" justify="space-between">
          <Title order={4}>Trainyard console</Title>
          <Group>
            <Text size="sm" c="dimmed">
              entity
            </Text>
            <Badge variant="light" data-testid="signed-in-entity">
              {entity}
            </Badge>
            <Button variant="subtle" size="xs" onClick={signOut} data-testid="sign-out">
              Sign out
            </Button>
          </Group>
        </Group>
      </AppShell.Header>
      <AppShell.Navbar p="xs">
        {SECTIONS.map((s) => (
          <NavLink key={s.to} href={hrefOf(s.to)} label={s.label} active={path.startsWith(s.to)} onClick={go(s.to)} />
        ))}
      </AppShell.Navbar>
      <AppShell.Main>{route(path)}</AppShell.Main>
    </AppShell>
  );
}

function route(path: string): ReactNode {
  let params: Record<string, string> | null;
  if (path === '/' || match('/models', path)) return <ModelsPage />;
  if ((params = match('/models/:id', path))) return <ModelPage key={params.id} id={params.id} />;
  if (match('/jobs', path)) return <JobsPage />;
  if ((params = match('/jobs/:id', path))) return <JobPage key={params.id} id={params.id} />;
  if (match('/playground', path)) return <PlaygroundPage />;
  if (match('/settings/keys', path)) return <KeysPage />;
  return <Text>No page here.</Text>;
}
