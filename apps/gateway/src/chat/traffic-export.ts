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
 *
 * The turns of one agent run are one trajectory: records with the same
 * `metadata[trajectory_by]` are joined into the last of them, each earlier one's Choice put in
 * place of the assistant message that repeats it in the last one's messages. An earlier record
 * the last one does not continue (other messages before it, another answer) stays a trajectory
 * of its own. SFT writes a joined run once, as the last record's line (every assistant turn in it).
 */

/** A record that was not exported, and why. */
export interface SkippedRecord {
  id: string;
  reason: string;
}

export interface ExportOptions {
  /** The metadata key whose records are the turns of one run (see the module comment). */
  trajectoryBy: string;
}

export interface ArtOptions extends ExportOptions {
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

/** A record that can be exported, and the earlier turns of its run that it takes in. */
interface Unit {
  record: ExportRecord & { trace: ServedTrace };
  /** Its messages, an earlier turn's Choice in place of the assistant message that repeats it. */
  history: (ChatMessageInput | ArtChoice)[];
  /** The ids of the records joined into it, its own last. */
  sources: string[];
  /** For an earlier turn of a run that its last turn does not continue: that last turn's id. */
  apartFrom?: string;
}

const NO_TRACE = 'kept without the tokens it was served (stored before they were kept, or too large to keep with them): nothing to train on';

/** The SFT JSONL lines of the records (each line without its newline). */
export function toSftLines(records: ExportRecord[], options: ExportOptions): { lines: string[]; skipped: SkippedRecord[] } {
  const { units, skipped } = toUnits(records, options);
  const lines: string[] = [];
  for (const { record } of units) {
    const { messages, tools } = record.trace;
    for (const choice of record.trace.choices) {
      lines.push(JSON.stringify({ messages: [...messages, choice.message], ...(tools?.length ? { tools } : {}) }));
    }
  }
  return { lines, skipped };
}

/** The records as ART trajectory groups (see the module comment). */
export function toArtGroups(records: ExportRecord[], options: ArtOptions): { groups: ArtGroup[]; skipped: SkippedRecord[] } {
  const { units, skipped } = toUnits(records, options);
  const groups = new Map<string, ArtGroup>();
  for (const { record, history, sources, apartFrom } of units) {
    const reward = rewardOf(record.metadata[options.rewardKey]);
    if (reward === null) {
      let why = `metadata.${options.rewardKey} is ${record.metadata[options.rewardKey] === undefined ? 'missing' : 'not a number'}: it is the reward`;
      // An earlier turn mostly goes without a reward of its own: say why its run's did not reach it.
      if (apartFrom) why += `; this turn was not joined into its run's last turn, ${apartFrom}, whose messages do not go on with this turn's messages and answer`;
      skipped.push(...sources.map((id) => ({ id, reason: why })));
      continue;
    }
    const key = record.metadata[options.groupBy];
    // A record without the key stands alone; the prefix keeps its id from meeting a key's value.
    const groupKey = key === undefined ? `record:${record.id}` : `key:${key}`;
    let group = groups.get(groupKey);
    if (!group) groups.set(groupKey, (group = { trajectories: [], metadata: key === undefined ? {} : { [options.groupBy]: key } }));
    const { tools } = record.trace;
    for (const choice of record.trace.choices) {
      group.trajectories.push({
        messages_and_choices: [...history, artChoice(choice)],
        ...(tools?.length ? { tools } : {}),
        reward,
        metadata: { ...record.metadata, source_id: record.id, ...(sources.length > 1 ? { source_ids: sources.join(',') } : {}) },
      });
    }
  }
  return { groups: [...groups.values()], skipped };
}

/**
 * The records that can be exported, in stored order, the earlier turns of each run joined into
 * its last record; the others named with the reason.
 */
function toUnits(records: ExportRecord[], options: ExportOptions): { units: Unit[]; skipped: SkippedRecord[] } {
  const skipped: SkippedRecord[] = [];
  const usable: Unit['record'][] = [];
  for (const record of records) {
    if (record.trace && record.trace.choices.length > 0) usable.push(record as Unit['record']);
    else skipped.push({ id: record.id, reason: record.trace ? 'it has no answer' : NO_TRACE });
  }
  // The last record of each run, which the earlier ones may be joined into.
  const lastOfRun = new Map<string, Unit['record']>();
  for (const record of usable) {
    const run = record.metadata[options.trajectoryBy];
    if (run !== undefined) lastOfRun.set(run, record);
  }
  const units = new Map<string, Unit>();
  for (const record of usable) units.set(record.id, { record, history: [...record.trace.messages], sources: [record.id] });
  for (const record of usable) {
    const run = record.metadata[options.trajectoryBy];
    const last = run === undefined ? undefined : lastOfRun.get(run);
    if (!last || last === record || record.trace.choices.length !== 1) continue;
    const into = units.get(last.id) as Unit;
    const at = record.trace.messages.length;
    const turn = into.history[at];
    const joins = turn !== undefined && !('token_ids' in turn) && continues(last.trace.messages, record.trace.messages, record.trace.choices[0]);
    if (!joins) {
      (units.get(record.id) as Unit).apartFrom = last.id;
      continue;
    }
    into.history[at] = artChoice(record.trace.choices[0]);
    into.sources.splice(into.sources.length - 1, 0, record.id);
    units.delete(record.id);
  }
  return { units: [...units.values()], skipped };
}

/** Whether `later` was given `earlier`'s messages, then the answer `choice` gave, as its next message. */
function continues(later: ChatMessageInput[], earlier: ChatMessageInput[], choice: ServedChoice): boolean {
  if (later.length <= earlier.length) return false;
  if (!earlier.every((message, i) => sameMessage(message, later[i]))) return false;
  const next = later[earlier.length];
  return next.role === 'assistant' && (next.content ?? '') === (choice.message.content ?? '') && sameCalls(next.tool_calls, choice.message.tool_calls);
}

function sameMessage(a: ChatMessageInput, b: ChatMessageInput): boolean {
  return a.role === b.role && (a.content ?? '') === (b.content ?? '') && (a.tool_call_id ?? null) === (b.tool_call_id ?? null) && sameCalls(a.tool_calls, b.tool_calls);
}

function sameCalls(a: ChatMessageInput['tool_calls'], b: ChatMessageInput['tool_calls']): boolean {
  const x = a ?? [];
  const y = b ?? [];
  return x.length === y.length && x.every((call, i) => call.id === y[i].id && call.function.name === y[i].function.name && call.function.arguments === y[i].function.arguments);
}

function artChoice(choice: ServedChoice): ArtChoice {
  return {
    // Each trajectory's Choices are read by their `message`, not their index.
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
