from ._pydantic_types.get_sampler_response import GetSamplerResponse as GetSamplerResponse

__all__ = ["GetSamplerResponse"]
