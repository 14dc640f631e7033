import type {
  CancelCompletion,
  CompletionEnded,
  CompletionLivenessReply,
  CompletionLivenessRequest,
  InferenceEventMessage,
  InferenceWorkerLoad,
  StartCompletionReply,
  StartCompletionRequest,
} from './chat/chat-completion.messages';
import type {
  ChatCompletionIdRequest,
  ChatCompletionList,
  ChatCompletionMessageList,
  ChatCompletionObject,
  DeleteChatCompletionReply,
  ExportPageReply,
  ExportPageRequest,
  ListChatCompletionMessagesRequest,
  ListChatCompletionsRequest,
  StoreChatCompletionRequest,
  UpdateChatCompletionRequest,
} from './chat/stored-completions.messages';
import type {
  AddConversationItemsRequest,
  ConversationIdRequest,
  ConversationItemRequest,
  ConversationRecord,
  CreateConversationRequest,
  DeleteConversationReply,
  DeleteResponseReply,
  ItemList,
  ListConversationItemsRequest,
  ListInputItemsRequest,
  ResponseContextReply,
  ResponseContextRequest,
  ResponseIdRequest,
  ResponseItem,
  ResponseObject,
  StoreResponseRequest,
  UpdateConversationRequest,
} from './chat/stored-responses.messages';
import type { SampleTokensReply, SampleTokensRequest, TokenSampleEvent } from './chat/token-sampling.messages';
import { TOKEN_SAMPLE_EVENTS_PREFIX } from './chat/token-sampling.messages';
import type { ServiceHealthReport, SystemCheckReport, WorkerAnnouncement } from './health/health.messages';
import type { ListBaseModelsReply } from './registry/base-models.messages';
import type {
  CheckpointRecord,
  DeleteCheckpointsReply,
  DeleteCheckpointsRequest,
  ListCheckpointsRequest,
  Page,
} from './registry/checkpoints.messages';
import type {
  CreateFileRequest,
  DeleteFileReply,
  FileContentReply,
  FileRecord,
  FileRequest,
  ListFilesReply,
  ListFilesRequest,
} from './registry/files.messages';
import type { LogTrajectoriesReply, LogTrajectoriesRequest } from './registry/metrics-log.messages';
import type {
  CreateModelRequest,
  DeleteModelReply,
  DeleteModelRequest,
  ListModelsReply,
  ListModelsRequest,
  ModelRecord,
} from './registry/models.messages';
import type { ModelsChanged } from './registry/models-changed.messages';
import type { ResolveModelReply, ResolveModelRequest } from './registry/resolve-model.messages';
import type {
  ListTrajectoriesRequest,
  RecordTrajectoriesReply,
  RecordTrajectoriesRequest,
  StoredTrajectoryGroups,
  StoreJobTrajectoriesRequest,
  TrajectoryRecord,
} from './registry/trajectories.messages';
import type { GetModelRequest, RecordCheckpointRequest } from './registry/record-checkpoint.messages';
import type {
  CancelTrainingJob,
  ClaimJobReply,
  ClaimJobRequest,
  CompleteJobRequest,
  CreateJobReply,
  CreateRlJobRequest,
  CreateSftJobRequest,
  EndedJobsReply,
  EndedJobsRequest,
  JobEventsAppended,
  JobProgress,
  JobProgressReply,
  JobRequest,
  ListJobEventsRequest,
  ListTrainingJobsRequest,
  TrainingEventRecord,
  TrainingJobRecord,
} from './training/training-jobs.messages';
import type { CreateFineTuningJobRequest, JobCheckpointRecord, ListJobCheckpointsRequest } from './training/fine-tuning.messages';
import type {
  ClaimTinkerCallReply,
  ClaimTinkerCallRequest,
  CompleteTinkerCallRequest,
  CreateTinkerModelRequest,
  CreateTinkerSessionRequest,
  ListTinkerTrainingRunsRequest,
  ResolveTinkerSamplerReply,
  ResolveTinkerSamplerRequest,
  RetrieveTinkerFutureRequest,
  StoreTinkerStateRequest,
  SubmitTinkerCallRequest,
  SubmitTinkerSampleRequest,
  TinkerFutureReply,
  TinkerFutureState,
  TinkerSessionReply,
  TinkerSessionRequest,
  TinkerStateReply,
  TinkerCheckpointsReply,
  TinkerStateRequest,
  TinkerTrainingRunRecord,
  TinkerTrainingRunRequest,
  TinkerTrainingRunsReply,
  TinkerWeightsInfoReply,
} from './training/tinker.messages';

/**
 * A request/reply subject together with the types of its request and reply, so both sides
 * of a message import one declaration and cannot drift apart.
 */
export interface RpcSubject<Req, Res> {
  readonly name: string;
  /** Phantom fields: carry the types only, never set. */
  readonly request?: Req;
  readonly reply?: Res;
}

function rpc<Req, Res>(name: string): RpcSubject<Req, Res> {
  return { name };
}

export type Empty = Record<string, never>;

/** A fire-and-forget subject (core NATS publish, no reply). */
export interface EventSubject<T> {
  readonly name: string;
  readonly payload?: T;
}

function event<T>(name: string): EventSubject<T> {
  return { name };
}

/**
 * Streams of one completion's InferenceEvents: `${prefix}.${gateway}.${completion_id}`, where
 * `gateway` names the gateway process relaying it (one subscription per gateway for all of
 * them). Workers publish to the work item's reply_subject as given, never build it.
 */
export const COMPLETION_EVENTS_PREFIX = 'chat.completion.events.v1';

/**
 * `${prefix}.${completion_id}`: answered (with an empty reply) by the worker generating that
 * completion, for as long as it does. No responders there means nobody is generating it.
 */
export const COMPLETION_LIVENESS_PREFIX = 'inference.completion.alive.v1';

/**
 * Every subject in the system, owner first and versioned. Services subscribe in a queue
 * group named after the service, so replicas share the load.
 */
export const Subjects = {
  chat: {
    healthCheck: rpc<Empty, ServiceHealthReport>('chat.health.check.v1'),
    /** Resolves the model, admits or refuses the request, and queues it for a worker. */
    startCompletion: rpc<StartCompletionRequest, StartCompletionReply>('chat.completion.start.v1'),
    /** The completion is over for its client: chat releases its admission, and stops its generation when asked to. */
    completionEnded: event<CompletionEnded>('chat.completion.ended.v1'),
    /** Whether a worker still generates the completion: the gateway's probe of a silent completion. */
    completionLiveness: rpc<CompletionLivenessRequest, CompletionLivenessReply>('chat.completion.liveness.v1'),
    /** `${name}.${gateway}.${completion_id}` (COMPLETION_EVENTS_PREFIX): one completion's events, sent by its worker to the work item's reply_subject. */
    completionEvents: event<InferenceEventMessage>(COMPLETION_EVENTS_PREFIX),
    /**
     * Samples continuations of a prompt given as token ids (Tinker's asample): resolves the
     * model, checks the request, admits it, queues it for a worker and answers with the result.
     * Give it a timeout as long as the sampling may take (the chat completion deadline).
     */
    sampleTokens: rpc<SampleTokensRequest, SampleTokensReply>('chat.tokens.sample.v1'),
    /** `${name}.${sampling id}` (TOKEN_SAMPLE_EVENTS_PREFIX): a sampling's worker answers the chat replica waiting for it. */
    tokenSampleEvents: event<TokenSampleEvent>(TOKEN_SAMPLE_EVENTS_PREFIX),
    /** Before a response runs: the earlier turns (previous_response_id, conversation) and the items its input references. */
    responseContext: rpc<ResponseContextRequest, ResponseContextReply>('chat.response.context.v1'),
    /** A response answered with `store`, or in a conversation: kept before its client sees it end. */
    storeResponse: rpc<StoreResponseRequest, Empty>('chat.response.store.v1'),
    getResponse: rpc<ResponseIdRequest, ResponseObject>('chat.response.get.v1'),
    deleteResponse: rpc<ResponseIdRequest, DeleteResponseReply>('chat.response.delete.v1'),
    listInputItems: rpc<ListInputItemsRequest, ItemList>('chat.response.input-items.list.v1'),
    createConversation: rpc<CreateConversationRequest, ConversationRecord>('chat.conversation.create.v1'),
    getConversation: rpc<ConversationIdRequest, ConversationRecord>('chat.conversation.get.v1'),
    updateConversation: rpc<UpdateConversationRequest, ConversationRecord>('chat.conversation.update.v1'),
    deleteConversation: rpc<ConversationIdRequest, DeleteConversationReply>('chat.conversation.delete.v1'),
    listConversationItems: rpc<ListConversationItemsRequest, ItemList>('chat.conversation.items.list.v1'),
    addConversationItems: rpc<AddConversationItemsRequest, ItemList>('chat.conversation.items.add.v1'),
    getConversationItem: rpc<ConversationItemRequest, ResponseItem>('chat.conversation.item.get.v1'),
    /** Answers with the conversation, as OpenAI does. */
    deleteConversationItem: rpc<ConversationItemRequest, ConversationRecord>('chat.conversation.item.delete.v1'),
    /** A chat completion answered with `store: true`: kept before its client sees it end. */
    storeChatCompletion: rpc<StoreChatCompletionRequest, Empty>('chat.stored-completion.store.v1'),
    listChatCompletions: rpc<ListChatCompletionsRequest, ChatCompletionList>('chat.stored-completions.list.v1'),
    getChatCompletion: rpc<ChatCompletionIdRequest, ChatCompletionObject>('chat.stored-completion.get.v1'),
    updateChatCompletion: rpc<UpdateChatCompletionRequest, ChatCompletionObject>('chat.stored-completion.update.v1'),
    deleteChatCompletion: rpc<ChatCompletionIdRequest, DeleteChatCompletionReply>('chat.stored-completion.delete.v1'),
    listChatCompletionMessages: rpc<ListChatCompletionMessagesRequest, ChatCompletionMessageList>('chat.stored-completion.messages.list.v1'),
    /** One page of stored completions or responses with what they were served, for an export. */
    exportPage: rpc<ExportPageRequest, ExportPageReply>('chat.stored-traffic.export-page.v1'),
  },
  registry: {
    healthCheck: rpc<Empty, ServiceHealthReport>('registry.health.check.v1'),
    listBaseModels: rpc<Empty, ListBaseModelsReply>('registry.base-models.list.v1'),
    listModels: rpc<ListModelsRequest, ListModelsReply>('registry.models.list.v1'),
    createModel: rpc<CreateModelRequest, ModelRecord>('registry.model.create.v1'),
    deleteModel: rpc<DeleteModelRequest, DeleteModelReply>('registry.model.delete.v1'),
    /** Used by chat completions: a model name to the base model and adapter to load. */
    resolveModel: rpc<ResolveModelRequest, ResolveModelReply>('registry.model.resolve.v1'),
    logTrajectories: rpc<LogTrajectoriesRequest, LogTrajectoriesReply>('registry.model.log.v1'),
    /** An RL job's trajectory groups into the artifact store, once, held for the job; repeating it stores nothing twice. */
    storeJobTrajectories: rpc<StoreJobTrajectoriesRequest, StoredTrajectoryGroups>('registry.trajectories.store.v1'),
    /** A stored job's groups kept beside the logged ones, naming the object stored for it; repeating it stores nothing twice. */
    recordTrajectories: rpc<RecordTrajectoriesRequest, RecordTrajectoriesReply>('registry.trajectories.record.v2'),
    listTrajectories: rpc<ListTrajectoriesRequest, Page<TrajectoryRecord>>('registry.trajectories.list.v1'),
    listCheckpoints: rpc<ListCheckpointsRequest, Page<CheckpointRecord>>('registry.checkpoints.list.v1'),
    deleteCheckpoints: rpc<DeleteCheckpointsRequest, DeleteCheckpointsReply>('registry.checkpoints.delete.v1'),
    createFile: rpc<CreateFileRequest, FileRecord>('registry.file.create.v1'),
    listFiles: rpc<ListFilesRequest, ListFilesReply>('registry.files.list.v1'),
    getFile: rpc<FileRequest, FileRecord>('registry.file.get.v1'),
    /** The file's bytes, parked as a blob for the caller to take. */
    getFileContent: rpc<FileRequest, FileContentReply>('registry.file.content.v1'),
    deleteFile: rpc<FileRequest, DeleteFileReply>('registry.file.delete.v1'),
    getModel: rpc<GetModelRequest, ModelRecord>('registry.model.get.v1'),
    /** A training job's new checkpoint, step = newest + 1, exactly once per job. */
    recordCheckpoint: rpc<RecordCheckpointRequest, CheckpointRecord>('registry.checkpoint.record.v2'),
    /**
     * A model's resolutions may have changed; published and flushed before the change is
     * acknowledged. Subscribed without a queue group: every chat replica must see every one.
     */
    modelsChanged: event<ModelsChanged>('registry.models.changed.v1'),
  },
  training: {
    healthCheck: rpc<Empty, ServiceHealthReport>('training.health.check.v1'),
    createRlJob: rpc<CreateRlJobRequest, CreateJobReply>('training.job.create.v1'),
    createSftJob: rpc<CreateSftJobRequest, CreateJobReply>('training.sft-job.create.v1'),
    getJob: rpc<JobRequest, TrainingJobRecord>('training.job.get.v1'),
    listJobs: rpc<ListTrainingJobsRequest, Page<TrainingJobRecord>>('training.jobs.list.v1'),
    listEvents: rpc<ListJobEventsRequest, Page<TrainingEventRecord>>('training.job.events.list.v1'),
    cancelJob: rpc<JobRequest, TrainingJobRecord>('training.job.cancel.v1'),
    /** POST /v1/fine_tuning/jobs: files checked, a model made for the job, the SFT job stored and queued. */
    createFineTuningJob: rpc<CreateFineTuningJobRequest, TrainingJobRecord>('training.fine-tuning-job.create.v1'),
    /** The checkpoint a job produced, once it has (one per job). */
    listJobCheckpoints: rpc<ListJobCheckpointsRequest, Page<JobCheckpointRecord>>('training.job.checkpoints.list.v1'),
    /**
     * Worker to orchestrator: may this worker run the job it pulled? v2: the claimed job's
     * payload carries resolved settings (TrainingJobPayload), so a worker that still reads
     * experimental_config gets no reply rather than a job it would train with defaults. v3: an
     * RL job's payload names its groups in the artifact store (version 3), so a worker that
     * expects them inline gets no reply rather than a job it cannot read.
     */
    claimJob: rpc<ClaimJobRequest, ClaimJobReply>('training.job.claim.v3'),
    /** Worker to orchestrator: training_started and gradient_step, stored once each. */
    reportProgress: rpc<JobProgress, JobProgressReply>('training.job.progress.v1'),
    /** Worker to orchestrator: the outcome; idempotent. */
    completeJob: rpc<CompleteJobRequest, TrainingJobRecord>('training.job.complete.v1'),
    /** Registry to orchestrator, sweeping the artifact store: of these jobs, those that will not run again. */
    endedJobs: rpc<EndedJobsRequest, EndedJobsReply>('training.jobs.ended.v1'),
    /** Every training worker listens; the one running the job aborts it. */
    cancelRequested: event<CancelTrainingJob>('training.job.cancel-requested.v1'),
    /** `${name}.${job_id}`: an event of that job was stored. */
    eventsAppended: event<JobEventsAppended>('training.job.events.v1'),
    /** The Tinker API's sessions, training clients and futures (tinker.messages.ts). */
    tinker: {
      createSession: rpc<CreateTinkerSessionRequest, TinkerSessionReply>('training.tinker.session.create.v1'),
      heartbeat: rpc<TinkerSessionRequest, Empty>('training.tinker.session.heartbeat.v1'),
      /** A training client on a registry model of its own; its future is done at once. */
      createModel: rpc<CreateTinkerModelRequest, TinkerFutureReply>('training.tinker.model.create.v1'),
      /** forward_backward, forward, optim_step, save_weights_for_sampler: stored, then queued. */
      submit: rpc<SubmitTinkerCallRequest, TinkerFutureReply>('training.tinker.call.submit.v1'),
      /** A future's state now (the gateway holds the SDK's poll by asking again). */
      retrieve: rpc<RetrieveTinkerFutureRequest, TinkerFutureState>('training.tinker.future.retrieve.v1'),
      /** Worker to orchestrator: may this worker run the call it pulled, now? */
      claim: rpc<ClaimTinkerCallRequest, ClaimTinkerCallReply>('training.tinker.call.claim.v1'),
      /** Worker to orchestrator: the call's result or error; idempotent. */
      complete: rpc<CompleteTinkerCallRequest, Empty>('training.tinker.call.complete.v1'),
      /** Worker to orchestrator: a save_weights call's state, kept in PostgreSQL. */
      storeState: rpc<StoreTinkerStateRequest, Empty>('training.tinker.state.store.v2'),
      /** A saved state's bytes (parked as a blob), for load_weights. */
      getState: rpc<TinkerStateRequest, TinkerStateReply>('training.tinker.state.get.v2'),
      /** POST /api/v1/weights_info: the base model and LoRA settings of a saved state. */
      weightsInfo: rpc<TinkerStateRequest, TinkerWeightsInfoReply>('training.tinker.state.info.v1'),
      /** create_sampling_session: the serving name of saved sampler weights. */
      resolveSampler: rpc<ResolveTinkerSamplerRequest, ResolveTinkerSamplerReply>('training.tinker.sampler.resolve.v1'),
      /** asample: stored as a future and sampled through chat (chat.tokens.sample.v1). */
      sample: rpc<SubmitTinkerSampleRequest, TinkerFutureReply>('training.tinker.sample.submit.v1'),
      /** The REST client's listings: the caller's training clients and what each saved. */
      listTrainingRuns: rpc<ListTinkerTrainingRunsRequest, TinkerTrainingRunsReply>('training.tinker.runs.list.v1'),
      getTrainingRun: rpc<TinkerTrainingRunRequest, TinkerTrainingRunRecord>('training.tinker.run.get.v1'),
      listCheckpoints: rpc<TinkerTrainingRunRequest, TinkerCheckpointsReply>('training.tinker.run.checkpoints.v1'),
    },
  },
  health: {
    healthCheck: rpc<Empty, ServiceHealthReport>('health.health.check.v1'),
    systemCheck: rpc<Empty, SystemCheckReport>('health.system.check.v1'),
  },
  inference: {
    /** Chat sends it, every inference worker listens; the one running the completion stops it. */
    cancel: event<CancelCompletion>('inference.completion.cancel.v1'),
    /** `${name}.${stream}`: every inference worker of that work queue announces its load there and listens to the others'. */
    workerLoad: event<InferenceWorkerLoad>('inference.worker.load.v1'),
    /** `${name}.${completion_id}` (COMPLETION_LIVENESS_PREFIX): answered, empty, by the worker generating the completion. */
    completionAlive: rpc<Empty, Empty>(COMPLETION_LIVENESS_PREFIX),
  },
  workers: {
    /** Scatter-gather, no queue group: every worker answers with its announcement. */
    ping: rpc<Empty, WorkerAnnouncement>('workers.ping.v1'),
  },
} as const;

/** The NATS queue group of each service; one name per bounded context. */
export const QueueGroups = {
  chat: 'chat',
  registry: 'model-registry',
  training: 'training-orchestrator',
  health: 'health',
} as const;
