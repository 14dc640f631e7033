import type { ChatMessageInput, ExportRecord, ServedChoice, ServedTrace } from '@trainyard/contracts';

/**
 * Stored traffic (chat completions kept with `store`, stored responses) as training data. Pure:
 * the shapes are decided and unit-tested here.
 *
 * - `sft`: one line of OpenAI's chat JSONL per choice: the messages the model was given, then
 *   the choice's assistant message; `tools` when it had any.
 * - `art`: one ART trajectory per choice, whose last item is the Choice as it was served (its
 *   exact `token_ids` and each token's sampling logprob and `token_id`), so that RL trains on
 *   what was sampled, never on a re-tokenization. The reward is the record's
 *   `metadata[reward_key]` read as a number; records with the same `metadata[group_by]` form
 *   one group (a record without it is a group of its own), in the order they were stored.
 */

/** A record that was not exported, and why. */
export interface SkippedRecord {
  id: string;
  reason: string;
}

export interface ArtOptions {
  groupBy: string;
  rewardKey: string;
}

export interface ArtTrajectory {
  messages_and_choices: (ChatMessageInput | ArtChoice)[];
  tools?: ServedTrace['tools'];
  reward: number;
  metadata: Record<string, string>;
}

export interface ArtChoice {
  index: number;
  message: ServedChoice['message'];
  logprobs: { content: { token: string; logprob: number; bytes: null; top_logprobs: never[]; token_id: number }[] } | null;
  finish_reason: string | null;
  token_ids: number[];
}

export interface ArtGroup {
  trajectories: ArtTrajectory[];
  metadata: Record<string, string>;
}

const NO_TRACE = 'stored before the tokens it was served were kept: nothing to train on';

/** The SFT JSONL lines of the records (each line without its newline). */
export function toSftLines(records: ExportRecord[]): { lines: string[]; skipped: SkippedRecord[] } {
  const lines: string[] = [];
  const skipped: SkippedRecord[] = [];
  for (const record of records) {
    if (!record.trace || record.trace.choices.length === 0) {
      skipped.push({ id: record.id, reason: record.trace ? 'it has no answer' : NO_TRACE });
      continue;
    }
    const { messages, tools } = record.trace;
    for (const choice of record.trace.choices) {
      lines.push(JSON.stringify({ messages: [...messages, choice.message], ...(tools?.length ? { tools } : {}) }));
    }
  }
  return { lines, skipped };
}

/** The records as ART trajectory groups (see the module comment). */
export function toArtGroups(records: ExportRecord[], options: ArtOptions): { groups: ArtGroup[]; skipped: SkippedRecord[] } {
  const groups = new Map<string, ArtGroup>();
  const skipped: SkippedRecord[] = [];
  for (const record of records) {
    if (!record.trace || record.trace.choices.length === 0) {
      skipped.push({ id: record.id, reason: record.trace ? 'it has no answer' : NO_TRACE });
      continue;
    }
    const reward = rewardOf(record.metadata[options.rewardKey]);
    if (reward === null) {
      skipped.push({ id: record.id, reason: `metadata.${options.rewardKey} is ${record.metadata[options.rewardKey] === undefined ? 'missing' : 'not a number'}: it is the reward` });
      continue;
    }
    const key = record.metadata[options.groupBy];
    // A record without the key stands alone; the prefix keeps its id from meeting a key's value.
    const groupKey = key === undefined ? `record:${record.id}` : `key:${key}`;
    let group = groups.get(groupKey);
    if (!group) groups.set(groupKey, (group = { trajectories: [], metadata: key === undefined ? {} : { [options.groupBy]: key } }));
    const { messages, tools } = record.trace;
    for (const choice of record.trace.choices) {
      group.trajectories.push({
        messages_and_choices: [...messages, artChoice(choice)],
        ...(tools?.length ? { tools } : {}),
        reward,
        metadata: { ...record.metadata, source_id: record.id },
      });
    }
  }
  return { groups: [...groups.values()], skipped };
}

function artChoice(choice: ServedChoice): ArtChoice {
  return {
    // Each trajectory holds one choice: ART reads a Choice by its `message`, not its index.
    index: 0,
    message: choice.message,
    logprobs: choice.logprobs && {
      content: choice.logprobs.map((t) => ({ token: t.token, logprob: t.logprob, bytes: null, top_logprobs: [], token_id: t.token_id })),
    },
    finish_reason: choice.finish_reason,
    token_ids: choice.token_ids,
  };
}

/** A reward written as text in metadata: a finite number, or null. */
export function rewardOf(value: string | undefined): number | null {
  if (value === undefined || value.trim() === '') return null;
  const reward = Number(value);
  return Number.isFinite(reward) ? reward : null;
}
