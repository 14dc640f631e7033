import { Alert, Badge, Button, Code, CopyButton, Group, Stack, Table, Text, TextInput, Title } from '@mantine/core';
import { FormEvent, useState } from 'react';
import { consoleApi } from '../api/client';
import type { ConsoleKeyView, CreatedConsoleKeyView, List } from '../api/types';
import { ConfirmButton } from '../components/confirm-button';
import { formatDate } from '../format';
import { useSession } from '../session/session';
import { useLoad } from '../use-load';

/** Account settings: create keys (the secret shown once), list them, revoke them. */
export function KeysPage() {
  const { state } = useSession();
  const sessionKeyId = state.status === 'signed-in' ? state.keyId : undefined;
  const keys = useLoad(() => consoleApi<List<ConsoleKeyView>>('GET', 'keys'), []);
  const [name, setName] = useState('');
  const [created, setCreated] = useState<{ name: string; secret: string }>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const create = async (event: FormEvent) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      const key = await consoleApi<CreatedConsoleKeyView>('POST', 'keys', { name });
      setCreated({ name: key.name, secret: key.key });
      setName('');
      keys.reload();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (key: ConsoleKeyView) => {
    await consoleApi('DELETE', `keys/${key.id}`);
    keys.reload();
  };

  const rows = [...(keys.data?.data ?? [])].reverse();
  return (
    <Stack>
      <Title order={2}>Account settings</Title>
      <Text c="dimmed" size="sm">
        API keys of entity <b>{state.status === 'signed-in' ? state.entity : ''}</b>. A key is shown once, when it is made; the service keeps only
        its hash.
      </Text>

      <form onSubmit={create}>
        <Group align="flex-end">
          <TextInput
            label="New key name"
            placeholder="e.g. ci, laptop, art-training"
            value={name}
            onChange={(e) => setName(e.currentTarget.value)}
            required
            maxLength={100}
            w={320}
            data-testid="new-key-name"
          />
          <Button type="submit" loading={busy} data-testid="create-key">
            Create key
          </Button>
        </Group>
      </form>
      {error && <Alert color="red">{error}</Alert>}

      {created && (
        <Alert color="green" title={`Key "${created.name}" created: copy it now, it will not be shown again`} withCloseButton onClose={() => setCreated(undefined)}>
          <Group gap="sm">
            <Code fz="sm" data-testid="new-key-secret">
              {created.secret}
            </Code>
            <CopyButton value={created.secret}>
              {({ copied, copy }) => (
                <Button size="xs" variant="light" color={copied ? 'teal' : 'blue'} onClick={copy} data-testid="copy-key">
                  {copied ? 'Copied' : 'Copy'}
                </Button>
              )}
            </CopyButton>
          </Group>
        </Alert>
      )}

      <Title order={3} mt="md">
        API keys
      </Title>
      {keys.error && <Alert color="red">{keys.error}</Alert>}
      <Table striped>
        <Table.Thead>
          <Table.Tr>
            <Table.Th>Name</Table.Th>
            <Table.Th>Key</Table.Th>
            <Table.Th>Created</Table.Th>
            <Table.Th>Last used</Table.Th>
            <Table.Th>Status</Table.Th>
            <Table.Th />
          </Table.Tr>
        </Table.Thead>
        <Table.Tbody>
          {rows.map((key) => (
            <Table.Tr key={key.id} data-testid="key-row" data-key-name={key.name} data-key-id={key.id}>
              <Table.Td>
                {key.name}
                {key.id === sessionKeyId && (
                  <Badge ml="xs" size="xs" variant="outline">
                    this session
                  </Badge>
                )}
              </Table.Td>
              <Table.Td ff="monospace">{key.prefix}…</Table.Td>
              <Table.Td>{formatDate(key.created_at)}</Table.Td>
              <Table.Td>{key.last_used_at ? formatDate(key.last_used_at) : 'never'}</Table.Td>
              <Table.Td>
                {key.revoked_at ? (
                  <Badge color="gray" variant="light" data-testid="key-status">
                    revoked
                  </Badge>
                ) : (
                  <Badge color="green" variant="light" data-testid="key-status">
                    active
                  </Badge>
                )}
              </Table.Td>
              <Table.Td>
                {!key.revoked_at && (
                  <ConfirmButton
                    title={`Revoke key "${key.name}"?`}
                    message={
                      key.id === sessionKeyId
                        ? 'This console signed in with this key: revoking it signs you out. Clients using it are refused from their next request.'
                        : 'Clients using this key are refused from their next request. This cannot be undone.'
                    }
                    confirmLabel="Revoke"
                    onConfirm={() => revoke(key)}
                    data-testid="revoke-key"
                  >
                    Revoke
                  </ConfirmButton>
                )}
              </Table.Td>
            </Table.Tr>
          ))}
        </Table.Tbody>
      </Table>
    </Stack>
  );
}
