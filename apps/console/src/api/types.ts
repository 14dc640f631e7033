// The console speaks the public API: its shapes are the contracts' (the framework-free
// contracts library; nothing of the backend is bundled), plus the few of the console's own routes.
export type {
  CheckpointRecord,
  ConsoleKeyView,
  ConsoleSessionView,
  CreatedConsoleKeyView,
  DeleteCheckpointsReply,
  ModelRecord,
  Page,
  TrainingEventRecord,
  TrainingJobRecord,
  TrainingJobStatus,
  TrajectoryRecord,
} from '@trainyard/contracts';

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
