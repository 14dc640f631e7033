import { Badge, Button, Card, Code, Collapse, Group, Paper, Stack, Table, Text } from '@mantine/core';
import { useState } from 'react';
import type { TrajectoryRecord } from '../api/types';
import { formatNumber } from '../format';
import { metricsOf, Turn, turnsOf } from '../runs/trajectory-view';
import { MetricsList } from './metrics-list';

const ROLE_COLORS: Record<string, string> = { system: 'gray', user: 'blue', assistant: 'teal', tool: 'orange' };

/** One kept trajectory: its reward and metrics, then every turn with tool calls, tool results and a Choice's logprobs. */
export function TrajectoryCard({ record }: { record: TrajectoryRecord }) {
  const turns = turnsOf(record.trajectory);
  const histories = Array.isArray(record.trajectory['additional_histories']) ? record.trajectory['additional_histories'].length : 0;
  return (
    <Card withBorder padding="sm" data-testid="trajectory" data-trajectory-id={record.id} data-reward={record.reward}>
      <Stack gap="xs">
        <Group gap="md">
          <Text size="sm" fw={600}>
            Trajectory {record.index}
          </Text>
          <Text size="sm" data-testid="trajectory-reward">
            reward {formatNumber(record.reward)}
          </Text>
          <MetricsList metrics={metricsOf(record.trajectory)} />
          {histories > 0 && (
            <Text size="xs" c="dimmed">
              + {histories} additional histories
            </Text>
          )}
        </Group>
        {turns.map((turn, i) => (
          <TurnView key={i} turn={turn} />
        ))}
      </Stack>
    </Card>
  );
}

function TurnView({ turn }: { turn: Turn }) {
  const [showLogprobs, setShowLogprobs] = useState(false);
  return (
    <Paper withBorder p="xs" data-testid="trajectory-turn" data-role={turn.role}>
      <Group gap="xs" mb={4}>
        <Badge size="sm" variant="light" color={ROLE_COLORS[turn.role] ?? 'gray'}>
          {turn.role === 'tool' ? 'tool result' : turn.role}
        </Badge>
        {turn.choice && (
          <Badge size="sm" variant="outline" color="teal">
            choice{turn.finishReason ? ` · ${turn.finishReason}` : ''}
          </Badge>
        )}
        {turn.toolCallId && (
          <Text size="xs" c="dimmed" ff="monospace">
            for {turn.toolCallId}
          </Text>
        )}
        {turn.logprobs.length > 0 && (
          <Button size="compact-xs" variant="subtle" onClick={() => setShowLogprobs((v) => !v)} data-testid="toggle-logprobs">
            {showLogprobs ? 'hide' : 'show'} logprobs ({turn.logprobs.length} tokens)
          </Button>
        )}
      </Group>
      {turn.text && (
        <Text size="sm" style={{ whiteSpace: 'pre-wrap' }} data-testid="turn-text">
          {turn.text}
        </Text>
      )}
      {turn.toolCalls.map((call, i) => (
        <Code block key={i} data-testid="tool-call">
          {`${call.name}(${call.arguments})${call.id ? `  [${call.id}]` : ''}`}
        </Code>
      ))}
      <Collapse expanded={showLogprobs}>
        {showLogprobs && (
          <Table withTableBorder striped mt="xs" data-testid="trajectory-logprobs">
            <Table.Tbody>
              {turn.logprobs.map((t, i) => (
                <Table.Tr key={i}>
                  <Table.Td ff="monospace">{JSON.stringify(t.token)}</Table.Td>
                  <Table.Td>{formatNumber(t.logprob)}</Table.Td>
                  <Table.Td>{(100 * Math.exp(t.logprob)).toFixed(1)}%</Table.Td>
                </Table.Tr>
              ))}
            </Table.Tbody>
          </Table>
        )}
      </Collapse>
    </Paper>
  );
}
