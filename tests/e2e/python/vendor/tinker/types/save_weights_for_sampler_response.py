from ._pydantic_types.save_weights_for_sampler_response import (
    SaveWeightsForSamplerResponse as SaveWeightsForSamplerResponse,
)
from ._pydantic_types.save_weights_for_sampler_response import (
    SaveWeightsForSamplerResponseInternal as SaveWeightsForSamplerResponseInternal,
)

__all__ = ["SaveWeightsForSamplerResponseInternal", "SaveWeightsForSamplerResponse"]
