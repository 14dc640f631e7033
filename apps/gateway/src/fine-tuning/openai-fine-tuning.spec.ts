import type { FineTuningDetails, JobCheckpointRecord, TrainingJobRecord } from '@trainyard/contracts';
import { fromFineTuningId, toFineTuningId } from './fine-tuning-ids';
import { estimatedFinish, toOpenAiCheckpoint, toOpenAiEvent, toOpenAiJob } from './openai-fine-tuning';

const JOB_ID = '0f8fad5b-d9cb-469f-a165-70867728950e';
const HYPERPARAMETERS = { n_epochs: 3, batch_size: 2, learning_rate_multiplier: 1 };
const DETAILS: FineTuningDetails = {
  base_model: 'trainyard/tiny-chat',
  training_file: 'file-train',
  validation_file: null,
  suffix: 'bot',
  seed: 42,
  metadata: { team: 'support' },
  hyperparameters: HYPERPARAMETERS,
  model: { entity: 'acme', project: 'fine-tuning', name: 'bot-0f8fad5bd9cb469fa16570867728950e' },
};

function job(fields: Partial<TrainingJobRecord> = {}): TrainingJobRecord & { fine_tuning: FineTuningDetails } {
  return {
    id: JOB_ID,
    object: 'training_job',
    type: 'sft',
    model_id: 'model-1',
    status: 'queued',
    created_at: '2026-11-28T10:00:00.500Z',
    training_start: null,
    training_end: null,
    error_message: null,
    checkpoint_step: null,
    ignored_config_keys: [],
    attempts: 0,
    no_gradient_steps_reason: null,
    trained_tokens: null,
    fine_tuning: DETAILS,
    progress: null,
    ...fields,
  } as TrainingJobRecord & { fine_tuning: FineTuningDetails };
}

describe('fine-tuning ids', () => {
  it('are the uuid without dashes behind a prefix, and back', () => {
    expect(toFineTuningId('ftjob', JOB_ID)).toBe('ftjob-0f8fad5bd9cb469fa16570867728950e');
    expect(fromFineTuningId('ftjob', 'ftjob-0f8fad5bd9cb469fa16570867728950e')).toBe(JOB_ID);
  });

  it('name nothing with another prefix or another form', () => {
    expect(fromFineTuningId('ftjob', 'ftevent-0f8fad5bd9cb469fa16570867728950e')).toBeUndefined();
    expect(fromFineTuningId('ftjob', JOB_ID)).toBeUndefined();
    expect(fromFineTuningId('ftjob', 'ftjob-0f8fad5bd9cb469fa16570867728950')).toBeUndefined();
    expect(fromFineTuningId('ftjob', 'ftjob-0F8FAD5BD9CB469FA16570867728950E')).toBeUndefined();
  });
});

describe('toOpenAiJob', () => {
  it('answers a queued job as OpenAI does: no model, no finish, the hyperparameters in both places', () => {
    expect(toOpenAiJob(job())).toEqual({
      id: 'ftjob-0f8fad5bd9cb469fa16570867728950e',
      object: 'fine_tuning.job',
      created_at: Math.floor(Date.parse('2026-11-28T10:00:00Z') / 1000),
      finished_at: null,
      error: null,
      fine_tuned_model: null,
      hyperparameters: HYPERPARAMETERS,
      method: { type: 'supervised', supervised: { hyperparameters: HYPERPARAMETERS } },
      model: 'trainyard/tiny-chat',
      organization_id: 'acme',
      result_files: [],
      seed: 42,
      status: 'queued',
      trained_tokens: null,
      training_file: 'file-train',
      validation_file: null,
      estimated_finish: null,
      integrations: null,
      metadata: { team: 'support' },
      user_provided_suffix: 'bot',
    });
  });

  it('names a succeeded job’s checkpoint as the model chat and Responses serve, with its tokens and finish', () => {
    const done = toOpenAiJob(job({ status: 'succeeded', checkpoint_step: 1, trained_tokens: 120, training_end: '2026-11-28T10:05:00Z' }));
    expect(done).toMatchObject({
      status: 'succeeded',
      fine_tuned_model: 'wandb-artifact:///acme/fine-tuning/bot-0f8fad5bd9cb469fa16570867728950e:step1',
      trained_tokens: 120,
      finished_at: Math.floor(Date.parse('2026-11-28T10:05:00Z') / 1000),
      error: null,
    });
  });

  it('gives a failed job an error and a cancelled one none', () => {
    expect(toOpenAiJob(job({ status: 'failed', error_message: 'conversation 3: too long', training_end: '2026-11-28T10:05:00Z' })).error).toEqual({
      code: 'training_failed',
      message: 'conversation 3: too long',
      param: null,
    });
    const cancelled = toOpenAiJob(job({ status: 'cancelled', error_message: 'Training job was cancelled', training_end: '2026-11-28T10:05:00Z' }));
    expect(cancelled).toMatchObject({ error: null, fine_tuned_model: null, trained_tokens: null });
    expect(cancelled.finished_at).not.toBeNull();
  });
});

describe('estimatedFinish', () => {
  const start = Date.parse('2026-11-28T10:00:00Z');
  const running = { status: 'running' as const, training_start: '2026-11-28T10:00:00Z' };

  it('extends the pace of the steps so far to the steps left', () => {
    // 2 of 6 steps in 60 s: 30 s a step, 4 left.
    expect(estimatedFinish({ ...running, progress: { steps_done: 2, num_steps: 6 } }, start + 60_000)).toBe((start + 60_000 + 120_000) / 1000);
    expect(toOpenAiJob(job({ ...running, progress: { steps_done: 2, num_steps: 6 } }), start + 60_000).estimated_finish).toBe((start + 180_000) / 1000);
  });

  it('is null before the first step, after the last one and when the job does not run', () => {
    expect(estimatedFinish({ ...running, progress: { steps_done: 0, num_steps: 6 } }, start + 1_000)).toBeNull();
    expect(estimatedFinish({ ...running, progress: { steps_done: 6, num_steps: 6 } }, start + 1_000)).toBeNull();
    expect(estimatedFinish({ ...running, progress: null }, start + 1_000)).toBeNull();
    expect(estimatedFinish({ status: 'queued', training_start: null, progress: { steps_done: 2, num_steps: 6 } }, start + 1_000)).toBeNull();
  });
});

describe('toOpenAiEvent', () => {
  const at = '2026-11-28T10:01:00Z';
  const event = (type: 'training_started' | 'gradient_step' | 'training_ended' | 'training_failed', data: Record<string, unknown>, step?: number) => ({
    id: '11111111-2222-4333-8444-555555555555',
    type,
    data,
    created_at: at,
    ...(step === undefined ? {} : { step }),
  });

  it('makes a gradient step a metrics event with OpenAI’s loss names beside ours', () => {
    const mapped = toOpenAiEvent(event('gradient_step', { loss: 1.23456, valid_loss: 2, num_tokens: 40 }, 3), toOpenAiJob(job({ status: 'running' })));
    expect(mapped).toEqual({
      id: 'ftevent-11111111222243338444555555555555',
      object: 'fine_tuning.job.event',
      created_at: Math.floor(Date.parse(at) / 1000),
      level: 'info',
      type: 'metrics',
      message: 'Step 3: training loss=1.2346, validation loss=2.0000',
      data: { step: 3, train_loss: 1.23456, valid_loss: 2, full_valid_loss: 2, loss: 1.23456, num_tokens: 40 },
    });
  });

  it('words the start, the end (naming the model) and a failure as messages', () => {
    const running = toOpenAiJob(job({ status: 'running' }));
    expect(toOpenAiEvent(event('training_started', { num_sequences: 6 }), running)).toMatchObject({ type: 'message', level: 'info', message: 'Fine-tuning job started: 6 training steps' });
    const done = toOpenAiJob(job({ status: 'succeeded', checkpoint_step: 1 }));
    expect(toOpenAiEvent(event('training_ended', {}), done).message).toBe(`The job has successfully completed: new fine-tuned model ${done.fine_tuned_model}`);
    const failed = toOpenAiJob(job({ status: 'failed' }));
    expect(toOpenAiEvent(event('training_failed', { error_message: 'boom' }), failed)).toMatchObject({ level: 'error', message: 'boom' });
    const cancelled = toOpenAiJob(job({ status: 'cancelled' }));
    expect(toOpenAiEvent(event('training_failed', { error_message: 'Training job was cancelled' }), cancelled).level).toBe('info');
  });
});

describe('toOpenAiCheckpoint', () => {
  it('is the job’s checkpoint by its served name, at the job’s last gradient step', () => {
    const checkpoint: JobCheckpointRecord = {
      id: JOB_ID,
      job_id: JOB_ID,
      model_id: 'model-1',
      step: 1,
      model_name: 'wandb-artifact:///acme/fine-tuning/bot-0f8fad5bd9cb469fa16570867728950e:step1',
      num_gradient_steps: 6,
      last_step_metrics: { loss: 0.5, learning_rate: 5e-5 },
      created_at: '2026-11-28T10:04:59Z',
    };
    expect(toOpenAiCheckpoint(checkpoint)).toEqual({
      id: 'ftckpt-0f8fad5bd9cb469fa16570867728950e',
      object: 'fine_tuning.job.checkpoint',
      created_at: Math.floor(Date.parse('2026-11-28T10:04:59Z') / 1000),
      fine_tuned_model_checkpoint: checkpoint.model_name,
      fine_tuning_job_id: 'ftjob-0f8fad5bd9cb469fa16570867728950e',
      step_number: 6,
      metrics: { step: 6, train_loss: 0.5 },
    });
  });
});
