import { Alert, Button, Card, Center, Code, PasswordInput, Stack, Text, Title } from '@mantine/core';
import { FormEvent, useState } from 'react';
import { useSession } from '../session/session';

export function SignInPage({ notice }: { notice?: string }) {
  const { signIn } = useSession();
  const [key, setKey] = useState('');
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      await signIn(key);
    } catch (err) {
      setError((err as Error).message);
      setBusy(false);
    }
  };

  return (
    <Center mih="100vh" bg="gray.0">
      <Card withBorder shadow="sm" padding="xl" w={440}>
        <form onSubmit={submit}>
          <Stack>
            <Title order={2}>Trainyard console</Title>
            <Text size="sm" c="dimmed">
              Sign in with an API key of your entity: the one <Code>npm start</Code> printed (kept in <Code>var/dev-api-key</Code>), or one
              made with <Code>keys.js create</Code>.
            </Text>
            {notice && !error && (
              <Alert color="yellow" data-testid="sign-in-notice">
                {notice}
              </Alert>
            )}
            <PasswordInput
              label="API key"
              placeholder="ty_..."
              value={key}
              onChange={(e) => setKey(e.currentTarget.value)}
              autoComplete="off"
              required
              data-testid="sign-in-key"
            />
            {error && (
              <Alert color="red" title="Not signed in" data-testid="sign-in-error">
                {error}
              </Alert>
            )}
            <Button type="submit" loading={busy} data-testid="sign-in-submit">
              Sign in
            </Button>
          </Stack>
        </form>
      </Card>
    </Center>
  );
}
