import { Button, ButtonProps, Group, Modal, Text } from '@mantine/core';
import { useDisclosure } from '@mantine/hooks';
import { ReactNode, useState } from 'react';

interface ConfirmButtonProps extends ButtonProps {
  /** What the modal asks, e.g. "Delete checkpoint step 3?" */
  title: string;
  message: ReactNode;
  confirmLabel: string;
  onConfirm(): Promise<unknown>;
  children: ReactNode;
  'data-testid'?: string;
}

/** A destructive action that asks first, and says so if it then fails. */
export function ConfirmButton({ title, message, confirmLabel, onConfirm, children, ...button }: ConfirmButtonProps) {
  const [opened, { open, close }] = useDisclosure(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string>();

  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await onConfirm();
      close();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <Button color="red" variant="light" size="xs" onClick={open} {...button}>
        {children}
      </Button>
      <Modal opened={opened} onClose={close} title={title} centered>
        <Text size="sm">{message}</Text>
        {error && (
          <Text size="sm" c="red" mt="sm" role="alert">
            {error}
          </Text>
        )}
        <Group justify="flex-end" mt="lg">
          <Button variant="default" onClick={close} disabled={busy}>
            Keep it
          </Button>
          <Button color="red" onClick={confirm} loading={busy} data-testid="confirm">
            {confirmLabel}
          </Button>
        </Group>
      </Modal>
    </>
  );
}
