import type { ChatMessage, ChatTemplate, ToolDefinition } from '../chat-template';
import type { TextTokenizer } from '../tokenizer';

/**
 * From conversations to token sequences with a per-token training mask.
 *
 * SFT: each assistant turn's tokens are the model's chat template rendered up to that turn
 * with add_generation_prompt (the prompt as inference sees it) and the template rendered
 * through that turn; the difference is the assistant turn, tool calls and end-of-turn markup
 * included, tokenized on its own (as it would be generated after the prompt) with mask 1.
 *
 * RL: the trainable tokens are a Choice's own sampled token ids with their sampling logprobs,
 * never a re-tokenization of its text (re-tokenizing drifts and corrupts importance ratios).
 * The whole history is rendered once with each Choice replaced by an assistant message whose
 * content is a unique sentinel; the text between sentinels is tokenized (mask 0) and each
 * sentinel is replaced by that Choice's token ids (mask 1). When a Choice ends with a special
 * token the template also writes after the content (e.g. <|im_end|>), the template's copy is
 * dropped, so the sequence is exactly what the model saw and produced.
 */

export interface TokenSequence {
  tokens: number[];
  /** 1 where the token is trained on (predicted from the ones before it). */
  mask: number[];
}

export interface RLSequence extends TokenSequence {
  /** Sampling logprob of each token where mask is 1 (null when the server gave none); NaN elsewhere. */
  logprobs: (number | null)[];
}

/** A sampled assistant turn, as the chat completion that produced it returned it. */
export interface RLChoice {
  choice: {
    /** The sampled token ids, end-of-turn token included when the server returned it. */
    tokenIds: number[];
    /** Sampling logprob per token id (null entries when unknown). */
    logprobs: (number | null)[] | null;
    /** The assistant message, for the template's benefit only (its text is never tokenized). */
    message: ChatMessage;
  };
}

export type RLHistoryItem = ChatMessage | RLChoice;

/** A conversation whose Choices are trained: the messages and sampled turns, in order, and its tools. */
export interface RLHistory {
  messagesAndChoices: RLHistoryItem[];
  tools?: ToolDefinition[];
}

export interface SftConversation {
  /** `weight` 0 on an assistant message: context only, no loss (OpenAI's chat JSONL); absent or 1 trains it. */
  messages: (ChatMessage & { weight?: 0 | 1 })[];
  tools?: ToolDefinition[];
}

export interface Tokenizing {
  tokenizer: TextTokenizer;
  chatTemplate: ChatTemplate | null;
}

export function isChoice(item: RLHistoryItem): item is RLChoice {
  return typeof item === 'object' && item !== null && 'choice' in item;
}

function templateOf(lm: Tokenizing): ChatTemplate {
  if (!lm.chatTemplate) throw new Error('the model has no chat template (tokenizer_config.json chat_template)');
  return lm.chatTemplate;
}

/**
 * Token sequence of an SFT conversation; mask 1 on every assistant turn, or with
 * `assistantTurns` "last" on the last one only (the earlier ones stay as context, mask 0).
 * An assistant message of `weight` 0 is context too, whichever turns are trained.
 */
export function buildSftSequence(lm: Tokenizing, conversation: SftConversation, assistantTurns: 'all' | 'last' = 'all'): TokenSequence {
  const template = templateOf(lm);
  const { messages, tools } = conversation;
  const last = messages.map((m) => m.role).lastIndexOf('assistant');
  const tokens: number[] = [];
  const mask: number[] = [];
  const push = (text: string, m: number) => {
    for (const id of lm.tokenizer.encode(text)) {
      tokens.push(id);
      mask.push(m);
    }
  };
  let done = '';
  messages.forEach((message, i) => {
    if (message.role !== 'assistant') return;
    const prompt = template.render(messages.slice(0, i), { tools, addGenerationPrompt: true });
    const through = template.render(messages.slice(0, i + 1), { tools, addGenerationPrompt: false });
    if (!prompt.startsWith(done) || !through.startsWith(prompt)) {
      throw new Error(`messages[${i}]: the chat template does not render this conversation incrementally, so the assistant turn cannot be located`);
    }
    push(prompt.slice(done.length), 0);
    const trained = (assistantTurns === 'all' || i === last) && message.weight !== 0;
    push(through.slice(prompt.length), trained ? 1 : 0);
    done = through;
  });
  if (!mask.includes(1)) throw new Error('the conversation has no assistant message to train on');
  return { tokens, mask };
}

const SENTINEL = (k: number) => `\u0000CHOICE_${k}\u0000`;

/** Token sequence of an RL history; mask 1 exactly on the Choices' sampled tokens. */
export function buildRlSequence(lm: Tokenizing, history: RLHistory): RLSequence {
  const template = templateOf(lm);
  const choices: RLChoice[] = [];
  const messages = history.messagesAndChoices.map((item) => {
    if (!isChoice(item)) return item;
    const k = choices.length;
    choices.push(item);
    // Content only: the sampled ids already hold any tool-call text the model wrote.
    return { role: 'assistant', content: SENTINEL(k) } as ChatMessage;
  });
  if (choices.length === 0) return { tokens: [], mask: [], logprobs: [] };
  const text = template.render(messages, { tools: history.tools, addGenerationPrompt: false });

  const tokens: number[] = [];
  const mask: number[] = [];
  const logprobs: (number | null)[] = [];
  let rest = text;
  choices.forEach((c, k) => {
    const at = rest.indexOf(SENTINEL(k));
    if (at < 0) throw new Error(`choice ${k}: the chat template dropped the assistant turn; cannot place its tokens`);
    for (const id of lm.tokenizer.encode(rest.slice(0, at))) {
      tokens.push(id);
      mask.push(0);
      logprobs.push(NaN);
    }
    const { tokenIds, logprobs: lps } = c.choice;
    if (lps && lps.length !== tokenIds.length) throw new Error(`choice ${k}: ${tokenIds.length} token ids but ${lps.length} logprobs`);
    tokenIds.forEach((id, j) => {
      tokens.push(id);
      mask.push(1);
      logprobs.push(lps ? lps[j] : null);
    });
    rest = rest.slice(at + SENTINEL(k).length);
    // The template writes its own end-of-turn after the content; the sample already has it.
    const last = tokenIds[tokenIds.length - 1];
    const lastText = last !== undefined && lm.tokenizer.isSpecial(last) ? lm.tokenizer.idToToken(last) : undefined;
    if (lastText && rest.startsWith(lastText)) rest = rest.slice(lastText.length);
  });
  // Whatever follows the last Choice trains nothing and conditions nothing: leave it out.
  return { tokens, mask, logprobs };
}
