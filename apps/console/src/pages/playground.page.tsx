import { Alert, Button, Card, Code, Group, Loader, NumberInput, Select, Stack, Switch, Table, Text, Textarea, Title } from '@mantine/core';
import { FormEvent, useState } from 'react';
import { api, apiWithHeaders } from '../api/client';
import type { ChatCompletion, CheckpointRecord, Page } from '../api/types';
import { formatNumber, modelLabel, servingName } from '../format';
import { useLoad } from '../use-load';
import { loadModels } from './models.page';

interface ModelGroup {
  group: string;
  items: { value: string; label: string }[];
}

/** Base models, then each trainable model: newest checkpoint first, then every step. */
async function loadModelChoices(): Promise<ModelGroup[]> {
  const [bases, models] = await Promise.all([api<string[]>('GET', 'preview/base-models'), loadModels()]);
  const trained = await Promise.all(
    models.map(async (model): Promise<ModelGroup> => {
      const { data } = await api<Page<CheckpointRecord>>('GET', `preview/models/${model.id}/checkpoints?limit=100&order=desc`);
      return {
        group: modelLabel(model),
        items: [
          { value: servingName(model), label: `${modelLabel(model)} (newest)` },
          ...data.map((c) => ({ value: servingName(model, c.step), label: `${modelLabel(model)} step ${c.step}` })),
        ],
      };
    }),
  );
  return [{ group: 'Base models', items: bases.map((b) => ({ value: b, label: b })) }, ...trained];
}

interface Outcome {
  completion: ChatCompletion;
  servedStep: string;
}

/** One chat completion at a time, with its logprobs and the step that served it. */
export function PlaygroundPage() {
  const choices = useLoad(loadModelChoices, []);
  const [model, setModel] = useState<string | null>(null);
  const [system, setSystem] = useState('');
  const [message, setMessage] = useState('Hello!');
  const [maxTokens, setMaxTokens] = useState<number | string>(32);
  const [temperature, setTemperature] = useState<number | string>(1);
  const [jsonMode, setJsonMode] = useState(false);
  const [outcome, setOutcome] = useState<Outcome>();
  const [error, setError] = useState<string>();
  const [busy, setBusy] = useState(false);

  const chosen = model ?? choices.data?.[0]?.items[0]?.value ?? null;

  const send = async (event: FormEvent) => {
    event.preventDefault();
    if (!chosen) return;
    setBusy(true);
    setError(undefined);
    try {
      const { body, headers } = await apiWithHeaders<ChatCompletion>('POST', 'chat/completions', {
        model: chosen,
        messages: [...(system.trim() ? [{ role: 'system', content: system }] : []), { role: 'user', content: message }],
        max_tokens: Number(maxTokens),
        temperature: Number(temperature),
        logprobs: true,
        top_logprobs: 3,
        ...(jsonMode ? { response_format: { type: 'json_object' } } : {}),
      });
      const step = headers.get('x-trainyard-checkpoint-step') ?? (body.checkpoint_step == null ? 'base' : String(body.checkpoint_step));
      setOutcome({ completion: body, servedStep: step });
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setBusy(false);
    }
  };

  const choice = outcome?.completion.choices[0];
  return (
    <Stack>
      <Title order={2}>Playground</Title>
      {choices.error && <Alert color="red">{choices.error}</Alert>}
      {!choices.data && choices.loading && <Loader />}
      <form onSubmit={send}>
        <Stack maw={760}>
          <Select
            label="Model"
            data={choices.data ?? []}
            value={chosen}
            onChange={setModel}
            searchable
            allowDeselect={false}
            nothingFoundMessage="No such model"
            data-testid="playground-model"
          />
          <Textarea label="System prompt" value={system} onChange={(e) => setSystem(e.currentTarget.value)} autosize minRows={1} />
          <Textarea label="Message" value={message} onChange={(e) => setMessage(e.currentTarget.value)} autosize minRows={2} required data-testid="playground-message" />
          <Group align="flex-end">
            <NumberInput label="Max tokens" value={maxTokens} onChange={setMaxTokens} min={1} max={4096} w={140} />
            <NumberInput label="Temperature" value={temperature} onChange={setTemperature} min={0} max={2} step={0.1} decimalScale={2} w={140} />
            <Switch label="JSON mode" checked={jsonMode} onChange={(e) => setJsonMode(e.currentTarget.checked)} mb={8} data-testid="playground-json" />
            <Button type="submit" loading={busy} disabled={!chosen} data-testid="playground-send">
              Send
            </Button>
          </Group>
        </Stack>
      </form>
      {error && (
        <Alert color="red" data-testid="playground-error">
          {error}
        </Alert>
      )}

      {outcome && choice && (
        <Card withBorder padding="lg" maw={960}>
          <Stack>
            <Group gap="xl">
              <Text size="sm">
                Served step{' '}
                <Code data-testid="served-step">{outcome.servedStep}</Code>
              </Text>
              <Text size="sm" data-testid="usage">
                Tokens: {outcome.completion.usage.prompt_tokens} prompt, {outcome.completion.usage.completion_tokens} completion,{' '}
                {outcome.completion.usage.total_tokens} total
              </Text>
              <Text size="sm">Finish: {choice.finish_reason}</Text>
            </Group>
            <Code block data-testid="completion-content">
              {choice.message.content ?? ''}
            </Code>
            {choice.logprobs?.content && (
              <Table striped withTableBorder data-testid="logprobs">
                <Table.Thead>
                  <Table.Tr>
                    <Table.Th>Token</Table.Th>
                    <Table.Th>Logprob</Table.Th>
                    <Table.Th>Probability</Table.Th>
                    <Table.Th>Top alternatives</Table.Th>
                  </Table.Tr>
                </Table.Thead>
                <Table.Tbody>
                  {choice.logprobs.content.map((t, i) => (
                    <Table.Tr key={i}>
                      <Table.Td ff="monospace">{JSON.stringify(t.token)}</Table.Td>
                      <Table.Td>{formatNumber(t.logprob)}</Table.Td>
                      <Table.Td>{(100 * Math.exp(t.logprob)).toFixed(1)}%</Table.Td>
                      <Table.Td ff="monospace">
                        {(t.top_logprobs ?? []).map((a) => `${JSON.stringify(a.token)} ${formatNumber(a.logprob)}`).join(' · ')}
                      </Table.Td>
                    </Table.Tr>
                  ))}
                </Table.Tbody>
              </Table>
            )}
          </Stack>
        </Card>
      )}
    </Stack>
  );
}
