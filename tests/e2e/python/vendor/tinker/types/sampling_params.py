from ._pydantic_types.sampling_params import SamplingParams as SamplingParams

__all__ = ["SamplingParams"]
