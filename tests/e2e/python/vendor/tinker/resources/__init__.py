from .futures import (
    AsyncFuturesResource,
    AsyncFuturesResourceWithRawResponse,
)
from .models import (
    AsyncModelsResource,
)
from .sampling import (
    AsyncSamplingResource,
)
from .service import (
    AsyncServiceResource,
)
from .telemetry import (
    AsyncTelemetryResource,
    AsyncTelemetryResourceWithRawResponse,
)
from .training import (
    AsyncTrainingResource,
)
from .weights import (
    AsyncWeightsResource,
)

__all__ = [
    "AsyncServiceResource",
    "AsyncTrainingResource",
    "AsyncModelsResource",
    "AsyncWeightsResource",
    "AsyncSamplingResource",
    "AsyncFuturesResource",
    "AsyncFuturesResourceWithRawResponse",
    "AsyncTelemetryResource",
    "AsyncTelemetryResourceWithRawResponse",
]
