"""Public interfaces for the Tinker client library."""

from .api_future import APIFuture, AwaitableConcurrentFuture
from .sampling_client import SamplingClient
from .service_client import ServiceClient
from .training_client import TrainingClient

__all__ = [
    "ServiceClient",
    "TrainingClient",
    "SamplingClient",
    "APIFuture",
    "AwaitableConcurrentFuture",
]
