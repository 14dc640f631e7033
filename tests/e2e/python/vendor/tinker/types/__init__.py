from __future__ import annotations

from .audit_log_entry import AuditLogEntry as AuditLogEntry
from .audit_log_response import AuditLogResponse as AuditLogResponse
from .auth_token_response import AuthTokenResponse as AuthTokenResponse
from .billing_usage_request import (
    GetBillingUsageRequest as GetBillingUsageRequest,
)
from .billing_usage_response import (
    BillingEventInfo as BillingEventInfo,
)
from .billing_usage_response import (
    BillingUsageEvent as BillingUsageEvent,
)
from .billing_usage_response import (
    BillingUsageResponse as BillingUsageResponse,
)
from .billing_usage_response import (
    BillingUsageSession as BillingUsageSession,
)
from .billing_usage_response import (
    CheckpointBillingEvent as CheckpointBillingEvent,
)
from .billing_usage_response import (
    SamplingPrefillBillingEvent as SamplingPrefillBillingEvent,
)
from .billing_usage_response import (
    SamplingSampleBillingEvent as SamplingSampleBillingEvent,
)
from .billing_usage_response import (
    StorageBillingEvent as StorageBillingEvent,
)
from .billing_usage_response import (
    TrainingBillingEvent as TrainingBillingEvent,
)
from .checkpoint import (
    Checkpoint as Checkpoint,
)
from .checkpoint import (
    CheckpointType as CheckpointType,
)
from .checkpoint import (
    ParsedCheckpointTinkerPath as ParsedCheckpointTinkerPath,
)
from .checkpoint_archive_url_response import (
    CheckpointArchiveUrlResponse as CheckpointArchiveUrlResponse,
)
from .checkpoints_list_response import CheckpointsListResponse as CheckpointsListResponse
from .client_config_request import ClientConfigRequest as ClientConfigRequest
from .client_config_response import ClientConfigResponse as ClientConfigResponse
from .client_dynamic_config_response import (
    ClientDynamicConfigResponse as ClientDynamicConfigResponse,
)
from .create_model_request import CreateModelRequest as CreateModelRequest
from .create_model_response import CreateModelResponse as CreateModelResponse
from .create_sampling_session_request import (
    CreateSamplingSessionRequest as CreateSamplingSessionRequest,
)
from .create_sampling_session_response import (
    CreateSamplingSessionResponse as CreateSamplingSessionResponse,
)
from .create_session_request import CreateSessionRequest as CreateSessionRequest
from .create_session_response import CreateSessionResponse as CreateSessionResponse
from .cursor import Cursor as Cursor
from .datum import Datum as Datum
from .dmel_chunk import DmelChunk as DmelChunk
from .encoded_text_chunk import EncodedTextChunk as EncodedTextChunk
from .event_type import EventType as EventType
from .forward_backward_input import ForwardBackwardInput as ForwardBackwardInput
from .forward_backward_output import ForwardBackwardOutput as ForwardBackwardOutput
from .forward_backward_request import ForwardBackwardRequest as ForwardBackwardRequest
from .forward_request import ForwardRequest as ForwardRequest
from .future_retrieve_request import FutureRetrieveRequest as FutureRetrieveRequest
from .future_retrieve_response import FutureRetrieveResponse as FutureRetrieveResponse
from .get_info_request import GetInfoRequest as GetInfoRequest
from .get_info_response import GetInfoResponse as GetInfoResponse
from .get_info_response import ModelData as ModelData
from .get_sampler_response import GetSamplerResponse as GetSamplerResponse
from .get_server_capabilities_response import (
    GetServerCapabilitiesResponse as GetServerCapabilitiesResponse,
)
from .get_server_capabilities_response import SupportedModel as SupportedModel
from .get_session_response import GetSessionResponse as GetSessionResponse
from .health_response import HealthResponse as HealthResponse
from .image_asset_pointer_chunk import ImageAssetPointerChunk as ImageAssetPointerChunk
from .image_chunk import ImageChunk as ImageChunk
from .list_sessions_response import ListSessionsResponse as ListSessionsResponse
from .load_weights_request import LoadWeightsRequest as LoadWeightsRequest
from .load_weights_response import LoadWeightsResponse as LoadWeightsResponse
from .lora_config import LoraConfig as LoraConfig
from .loss_fn_inputs import LossFnInputs as LossFnInputs
from .loss_fn_output import LossFnOutput as LossFnOutput
from .loss_fn_type import LossFnType as LossFnType
from .model_id import ModelID as ModelID
from .model_input import ModelInput as ModelInput
from .model_input_chunk import ModelInputChunk as ModelInputChunk
from .optim_step_request import AdamParams as AdamParams
from .optim_step_request import OptimStepRequest as OptimStepRequest
from .optim_step_response import OptimStepResponse as OptimStepResponse
from .request_error_category import RequestErrorCategory as RequestErrorCategory
from .request_failed_response import RequestFailedResponse as RequestFailedResponse
from .request_id import RequestID as RequestID
from .sample_request import SampleRequest as SampleRequest
from .sample_response import SampleResponse as SampleResponse
from .sampled_sequence import SampledSequence as SampledSequence
from .sampling_params import SamplingParams as SamplingParams
from .save_weights_for_sampler_request import (
    SaveWeightsForSamplerRequest as SaveWeightsForSamplerRequest,
)
from .save_weights_for_sampler_response import (
    SaveWeightsForSamplerResponse as SaveWeightsForSamplerResponse,
)
from .save_weights_for_sampler_response import (
    SaveWeightsForSamplerResponseInternal as SaveWeightsForSamplerResponseInternal,
)
from .save_weights_request import SaveWeightsRequest as SaveWeightsRequest
from .save_weights_response import SaveWeightsResponse as SaveWeightsResponse
from .session_end_event import SessionEndEvent as SessionEndEvent
from .session_heartbeat_request import SessionHeartbeatRequest as SessionHeartbeatRequest
from .session_heartbeat_response import SessionHeartbeatResponse as SessionHeartbeatResponse
from .session_start_event import SessionStartEvent as SessionStartEvent
from .severity import Severity as Severity
from .shared import UntypedAPIFuture as UntypedAPIFuture
from .stop_reason import StopReason as StopReason
from .telemetry_batch import TelemetryBatch as TelemetryBatch
from .telemetry_event import TelemetryEvent as TelemetryEvent
from .telemetry_response import TelemetryResponse as TelemetryResponse
from .telemetry_send_request import TelemetrySendRequest as TelemetrySendRequest
from .tensor_data import TensorData as TensorData
from .tensor_dtype import TensorDtype as TensorDtype
from .training_run import TrainingRun as TrainingRun
from .training_runs_response import TrainingRunsResponse as TrainingRunsResponse
from .unhandled_exception_event import UnhandledExceptionEvent as UnhandledExceptionEvent
from .unload_model_request import UnloadModelRequest as UnloadModelRequest
from .unload_model_response import UnloadModelResponse as UnloadModelResponse
from .weights_info_response import WeightsInfoResponse as WeightsInfoResponse
from .whoami_response import WhoamiResponse as WhoamiResponse
