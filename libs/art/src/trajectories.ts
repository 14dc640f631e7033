import type {
  TrainingChatMessage as ChatMessage,
  TrainingChoice,
  TrainingConversation,
  TrainingHistory,
  TrainingRlSettings,
  TrainingToolCall as ToolCall,
  TrainingTrajectory,
  TrainingTrajectoryGroup,
} from '@trainyard/contracts';

/**
 * ART's training data as its client sends it (trajectory groups of an RL job, the JSONL of an
 * SFT job) to the training inputs a job's payload carries: trajectory groups the worker plans
 * into the trainer's token sequences, and the engine's conversations (TrainingTrajectoryGroup,
 * TrainingConversation).
 */

/** A problem in a request body, at a JSON path such as `trajectory_groups[0].trajectories[1].reward`. */
export interface WireIssue {
  path: string;
  message: string;
}

type Obj = Record<string, unknown>;
type TrainingHistoryItem = TrainingHistory['messagesAndChoices'][number];
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

export interface MapOptions {
  /**
   * Every Choice must carry the sampling logprob of each of its tokens: the trainer needs
   * them unless experimental_config allows training without them or recomputes them.
   */
  requireLogprobs?: boolean;
}

/**
 * An RL job's groups, as its client sent them, to the trainer's inputs under the job's
 * settings: what the orchestrator validates a new job with, and what the worker maps the
 * stored groups with (they passed once, so they pass again).
 */
export function rlTrainingGroups(
  raw: unknown,
  settings: Pick<TrainingRlSettings, 'allowTrainingWithoutLogprobs' | 'precalculateLogprobs'>,
): { groups: TrainingTrajectoryGroup[]; issues: WireIssue[] } {
  const requireLogprobs = !settings.allowTrainingWithoutLogprobs && !settings.precalculateLogprobs;
  return mapArtTrajectoryGroups(raw, undefined, { requireLogprobs });
}

/**
 * Where a trajectory is in an RL job's request, as its other problems are named: history 0 is
 * the trajectory's own, h > 0 its additional_histories[h - 1]. The worker names with it a
 * trajectory its RL plan cannot train.
 */
export function artTrajectoryPath(group: number, trajectory: number, history = 0, root = 'trajectory_groups'): string {
  return `${root}[${group}].trajectories[${trajectory}]${history > 0 ? `.additional_histories[${history - 1}]` : ''}`;
}

/**
 * ART's trajectory groups (api.md, as its client sends them) to the training inputs (TrainingTrajectoryGroup).
 * A Choice (recognised by its `message` key) keeps the exact token ids the chat completion
 * sampled: the choice's `token_ids`, else the `token_id` of each `logprobs.content` entry.
 * Its text is never re-tokenized. Unknown keys are ignored; every problem names its path.
 */
export function mapArtTrajectoryGroups(
  raw: unknown,
  root = 'trajectory_groups',
  options: MapOptions = {},
): { groups: TrainingTrajectoryGroup[]; issues: WireIssue[] } {
  const issues: WireIssue[] = [];
  const groups: TrainingTrajectoryGroup[] = [];
  if (!Array.isArray(raw)) return { groups, issues: [{ path: root, message: 'must be a list of trajectory groups' }] };
  raw.forEach((group, g) => {
    const at = `${root}[${g}]`;
    if (!isObj(group) || !Array.isArray(group['trajectories'])) {
      issues.push({ path: `${at}.trajectories`, message: 'is required and must be a list' });
      return;
    }
    const trajectories: TrainingTrajectory[] = [];
    group['trajectories'].forEach((t, i) => {
      const trajectory = mapTrajectory(t, `${at}.trajectories[${i}]`, issues, options);
      if (trajectory) trajectories.push(trajectory);
    });
    groups.push({ trajectories });
  });
  return { groups, issues };
}

function mapTrajectory(raw: unknown, at: string, issues: WireIssue[], options: MapOptions): TrainingTrajectory | null {
  if (!isObj(raw)) {
    issues.push({ path: at, message: 'must be an object' });
    return null;
  }
  const reward = raw['reward'] ?? 0;
  if (typeof reward !== 'number' || !Number.isFinite(reward)) issues.push({ path: `${at}.reward`, message: 'must be a finite number' });
  const history = mapHistory(raw, at, issues, options);
  const trajectory: TrainingTrajectory = { ...history, reward: typeof reward === 'number' ? reward : 0 };
  const extra = raw['additional_histories'];
  if (extra !== undefined && extra !== null) {
    if (!Array.isArray(extra)) issues.push({ path: `${at}.additional_histories`, message: 'must be a list' });
    else {
      trajectory.additionalHistories = extra.map((h, k) => {
        const hat = `${at}.additional_histories[${k}]`;
        if (isObj(h)) return mapHistory(h, hat, issues, options);
        issues.push({ path: hat, message: 'must be an object' });
        return { messagesAndChoices: [] };
      });
    }
  }
  return trajectory;
}

function mapHistory(raw: Obj, at: string, issues: WireIssue[], options: MapOptions): TrainingHistory {
  const items = raw['messages_and_choices'] ?? [];
  const history: TrainingHistory = { messagesAndChoices: [] };
  if (!Array.isArray(items)) issues.push({ path: `${at}.messages_and_choices`, message: 'must be a list' });
  else {
    items.forEach((item, i) => {
      const mapped = mapItem(item, `${at}.messages_and_choices[${i}]`, issues, options);
      if (mapped) history.messagesAndChoices.push(mapped);
    });
  }
  const tools = raw['tools'];
  if (tools !== undefined && tools !== null) {
    if (!Array.isArray(tools) || !tools.every(isObj)) issues.push({ path: `${at}.tools`, message: 'must be a list of tool definitions' });
    else history.tools = tools as object[];
  }
  return history;
}

function mapItem(raw: unknown, at: string, issues: WireIssue[], options: MapOptions): TrainingHistoryItem | null {
  if (!isObj(raw)) {
    issues.push({ path: at, message: 'must be a chat message or a Choice object' });
    return null;
  }
  return 'message' in raw ? mapChoice(raw, at, issues, options) : mapMessage(raw, at, issues);
}

function mapChoice(raw: Obj, at: string, issues: WireIssue[], options: MapOptions): TrainingChoice | null {
  const message = mapMessage(raw['message'], `${at}.message`, issues);
  if (!message) return null;
  const logprobs = raw['logprobs'];
  const content = isObj(logprobs) && Array.isArray(logprobs['content']) ? (logprobs['content'] as unknown[]) : null;
  let tokenIds: number[] | null = null;
  const given = raw['token_ids'];
  if (given !== undefined && given !== null) {
    if (!Array.isArray(given) || !given.every(isInt)) {
      issues.push({ path: `${at}.token_ids`, message: 'must be a list of non-negative integers' });
      return null;
    }
    tokenIds = given as number[];
  } else if (content) {
    const ids = content.map((entry) => (isObj(entry) ? entry['token_id'] : undefined));
    const bad = ids.findIndex((id) => !isInt(id));
    if (bad >= 0) {
      issues.push({ path: `${at}.logprobs.content[${bad}].token_id`, message: 'is missing: the sampled token ids are needed (request the completion from this service with logprobs: true)' });
      return null;
    }
    tokenIds = ids as number[];
  }
  if (!tokenIds) {
    issues.push({ path: at, message: 'a Choice needs its sampled token ids: request the completion with logprobs: true (or return_token_ids: true)' });
    return null;
  }
  const ids = tokenIds;
  let sampled: (number | null)[] | null = null;
  if (content) {
    sampled = ids.map((id, i) => {
      const entry = content[i];
      if (!isObj(entry) || typeof entry['logprob'] !== 'number' || !Number.isFinite(entry['logprob'])) return null;
      return entry['token_id'] === undefined || entry['token_id'] === id ? (entry['logprob'] as number) : null;
    });
    if (sampled.every((l) => l === null)) sampled = null;
  }
  const missing = sampled === null ? 0 : sampled.indexOf(null);
  if (options.requireLogprobs && missing >= 0) {
    issues.push({
      path: sampled === null ? `${at}.logprobs` : `${at}.logprobs.content[${missing}]`,
      message:
        'has no sampling logprob: request the completion with logprobs: true, or set experimental_config.allow_training_without_logprobs or precalculate_logprobs',
    });
    return null;
  }
  return { choice: { tokenIds: ids, logprobs: sampled, message: { ...message, role: 'assistant' } } };
}

/** A plain chat message; text-part content is joined into a string, as templates expect. */
export function mapMessage(raw: unknown, at: string, issues: WireIssue[]): ChatMessage | null {
  if (!isObj(raw)) {
    issues.push({ path: at, message: 'must be an object' });
    return null;
  }
  const role = raw['role'];
  if (typeof role !== 'string' || !role) {
    issues.push({ path: `${at}.role`, message: 'is required and must be a string' });
    return null;
  }
  const content = textContent(raw['content']);
  if (content === undefined) {
    issues.push({ path: `${at}.content`, message: 'must be a string, a list of text parts or null' });
    return null;
  }
  const message: ChatMessage = { role, content };
  const toolCalls = raw['tool_calls'];
  if (Array.isArray(toolCalls) && toolCalls.length > 0) {
    const bad = toolCalls.findIndex((c) => !isObj(c) || !isObj(c['function']) || typeof (c['function'] as Obj)['name'] !== 'string');
    if (bad >= 0) {
      issues.push({ path: `${at}.tool_calls[${bad}]`, message: 'must be {type: "function", function: {name, arguments}}' });
      return null;
    }
    message.tool_calls = toolCalls as ToolCall[];
  }
  if (typeof raw['tool_call_id'] === 'string') message.tool_call_id = raw['tool_call_id'];
  if (typeof raw['name'] === 'string') message.name = raw['name'];
  return message;
}

function textContent(content: unknown): string | null | undefined {
  if (content === null || content === undefined) return null;
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    const parts = content.map((p) => (isObj(p) && p['type'] === 'text' && typeof p['text'] === 'string' ? p['text'] : undefined));
    return parts.every((p) => p !== undefined) ? parts.join('') : undefined;
  }
  return undefined;
}

/**
 * One line of an SFT JSONL file: `{"messages": [...], "tools": [...]?}` with the last message
 * from the assistant. An assistant message may carry OpenAI's `weight` (0 or 1): 0 keeps it as
 * context without loss, so a line needs one of weight 1. Problems are named with the 1-based
 * line number.
 */
export function parseSftJsonl(text: string): { conversations: TrainingConversation[]; issues: WireIssue[] } {
  const conversations: TrainingConversation[] = [];
  const issues: WireIssue[] = [];
  const lines = text.split(/\r?\n/);
  lines.forEach((line, index) => {
    if (!line.trim()) return;
    const at = `line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      issues.push({ path: at, message: `is not valid JSON (${(err as Error).message})` });
      return;
    }
    if (!isObj(value) || !Array.isArray(value['messages']) || value['messages'].length === 0) {
      issues.push({ path: at, message: 'must be an object with a non-empty "messages" list' });
      return;
    }
    const before = issues.length;
    const messages = value['messages'].map((m, i) => withWeight(mapMessage(m, `${at}: messages[${i}]`, issues), m, `${at}: messages[${i}]`, issues));
    if (issues.length > before) return;
    const last = messages[messages.length - 1] as ChatMessage;
    if (last.role !== 'assistant') {
      issues.push({ path: at, message: 'the last message must be from the assistant (only assistant tokens are trained)' });
      return;
    }
    if (messages.every((m) => m?.role !== 'assistant' || m.weight === 0)) {
      issues.push({ path: at, message: 'every assistant message has weight 0: at least one must be trained' });
      return;
    }
    const tools = value['tools'];
    if (tools !== undefined && tools !== null && (!Array.isArray(tools) || !tools.every(isObj))) {
      issues.push({ path: `${at}: tools`, message: 'must be a list of tool definitions' });
      return;
    }
    conversations.push({ messages: messages as ChatMessage[], ...(Array.isArray(tools) ? { tools: tools as object[] } : {}) });
  });
  if (conversations.length === 0 && issues.length === 0) issues.push({ path: 'line 1', message: 'the file holds no conversations' });
  return { conversations, issues };
}

/** The message with OpenAI's SFT `weight` of an assistant message kept (0 only: 1 is the default). */
function withWeight(message: ChatMessage | null, raw: unknown, at: string, issues: WireIssue[]): ChatMessage | null {
  const weight = isObj(raw) ? raw['weight'] : undefined;
  if (message === null || weight === undefined || weight === null) return message;
  if (weight !== 0 && weight !== 1) {
    issues.push({ path: `${at}.weight`, message: 'must be 0 or 1' });
    return null;
  }
  if (message.role !== 'assistant') {
    issues.push({ path: `${at}.weight`, message: 'is for assistant messages only (it says whether the message is trained)' });
    return null;
  }
  return weight === 0 ? { ...message, weight: 0 } : message;
}
