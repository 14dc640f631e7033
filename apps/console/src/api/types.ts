// The console speaks the public API: its shapes are the contracts' (types only: nothing of
// the backend is bundled), plus the few of the console's own routes.
export type {
  CheckpointRecord,
  DeleteCheckpointsReply,
  ModelRecord,
  Page,
  TrainingEventRecord,
  TrainingJobRecord,
  TrainingJobStatus,
} from '@trainyard/contracts';

export interface ConsoleSession {
  entity: string;
  /** The key this session signed in with: revoking it signs the console out. */
  key_id: string;
  csrf_token: string;
  expires_at: string;
}

export interface ConsoleKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export interface List<T> {
  object: 'list';
  data: T[];
}

export interface ChatTokenLogprob {
  token: string;
  logprob: number;
  top_logprobs?: { token: string; logprob: number }[];
}

/** The parts of an OpenAI chat completion the playground shows. */
export interface ChatCompletion {
  id: string;
  model: string;
  checkpoint_step?: number | null;
  choices: {
    index: number;
    message: { role: string; content: string | null };
    logprobs: { content: ChatTokenLogprob[] | null } | null;
    finish_reason: string;
  }[];
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
}
