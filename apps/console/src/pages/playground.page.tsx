import { Alert, Button, Card, Code, Group, Loader, NumberInput, Select, SimpleGrid, Stack, Switch, Table, Text, Textarea, Title } from '@mantine/core';
import { servingName } from '@trainyard/contracts';
import { FormEvent, useState } from 'react';
import { api, apiWithHeaders } from '../api/client';
import type { ChatCompletion, CheckpointRecord, Page } from '../api/types';
import { formatNumber, modelLabel } from '../format';
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

type Result = { ok: true; outcome: Outcome } | { ok: false; error: string };

async function complete(model: string, body: Record<string, unknown>): Promise<Outcome> {
  const { body: completion, headers } = await apiWithHeaders<ChatCompletion>('POST', 'chat/completions', { ...body, model });
  const step = headers.get('x-trainyard-checkpoint-step') ?? (completion.checkpoint_step == null ? 'base' : String(completion.checkpoint_step));
  return { completion, servedStep: step };
}

/**
 * A chat completion with its logprobs and the step that served it; or, comparing, the same
 * request to two models or checkpoints at once, side by side.
 */
export function PlaygroundPage() {
  const choices = useLoad(loadModelChoices, []);
  const [model, setModel] = useState<string | null>(null);
  const [modelB, setModelB] = useState<string | null>(null);
  const [compare, setCompare] = useState(false);
  const [system, setSystem] = useState('');
  const [message, setMessage] = useState('Hello!');
  const [maxTokens, setMaxTokens] = useState<number | string>(32);
  const [temperature, setTemperature] = useState<number | string>(1);
  const [jsonMode, setJsonMode] = useState(false);
  const [results, setResults] = useState<Result[]>([]);
  const [busy, setBusy] = useState(false);

  const allItems = (choices.data ?? []).flatMap((g) => g.items);
  const chosen = model ?? allItems[0]?.value ?? null;
  const chosenB = modelB ?? allItems.find((i) => i.value !== chosen)?.value ?? chosen;
  const labelOf = (value: string | null) => allItems.find((i) => i.value === value)?.label ?? value ?? '';

  const send = async (event: FormEvent) => {
    event.preventDefault();
    if (!chosen || (compare && !chosenB)) return;
    setBusy(true);
    setResults([]);
    const body = {
      messages: [...(system.trim() ? [{ role: 'system', content: system }] : []), { role: 'user', content: message }],
      max_tokens: Number(maxTokens),
      temperature: Number(temperature),
      logprobs: true,
      top_logprobs: 3,
      ...(jsonMode ? { response_format: { type: 'json_object' } } : {}),
    };
    const targets = compare ? [chosen, chosenB as string] : [chosen];
    const settled = await Promise.allSettled(targets.map((target) => complete(target, body)));
    setResults(settled.map((s): Result => (s.status === 'fulfilled' ? { ok: true, outcome: s.value } : { ok: false, error: (s.reason as Error).message })));
    setBusy(false);
  };

  return (
    <Stack>
      <Title order={2}>Playground</Title>
      {choices.error && <Alert color="red">{choices.error}</Alert>}
      <form onSubmit={send}>
        <Stack maw={760}>
          <Group align="flex-end" grow={compare}>
            <Select
              label={compare ? 'Model A' : 'Model'}
              data={choices.data ?? []}
              value={chosen}
              onChange={setModel}
              searchable
              allowDeselect={false}
              nothingFoundMessage="No such model"
              // The loader sits inside the field: one above the form would move the form when the
              // models arrive, under a pointer already on its way to a control.
              rightSection={!choices.data && choices.loading ? <Loader size="xs" /> : undefined}
              placeholder={choices.data ? undefined : 'Loading models…'}
              data-testid="playground-model"
            />
            {compare && (
              <Select
                label="Model B"
                data={choices.data ?? []}
                value={chosenB}
                onChange={setModelB}
                searchable
                allowDeselect={false}
                nothingFoundMessage="No such model"
                data-testid="playground-model-b"
              />
            )}
          </Group>
          <Switch
            label="Compare two models or checkpoints side by side"
            checked={compare}
            onChange={(e) => setCompare(e.currentTarget.checked)}
            data-testid="playground-compare"
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

      {results.length === 1 && <ResultView result={results[0]} />}
      {results.length === 2 && (
        <SimpleGrid cols={2} data-testid="comparison">
          {results.map((result, i) => (
            <Stack key={i} gap="xs" data-testid={i === 0 ? 'compare-a' : 'compare-b'}>
              <Text fw={600} size="sm">
                {i === 0 ? 'A' : 'B'}: {labelOf(i === 0 ? chosen : chosenB)}
              </Text>
              <ResultView result={result} />
            </Stack>
          ))}
        </SimpleGrid>
      )}
    </Stack>
  );
}

function ResultView({ result }: { result: Result }) {
  if (!result.ok) {
    return (
      <Alert color="red" data-testid="playground-error">
        {result.error}
      </Alert>
    );
  }
  const { outcome } = result;
  const choice = outcome.completion.choices[0];
  if (!choice) return null;
  return (
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
  );
}
