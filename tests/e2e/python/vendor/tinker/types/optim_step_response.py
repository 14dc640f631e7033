from ._pydantic_types.optim_step_response import OptimStepResponse as OptimStepResponse

__all__ = ["OptimStepResponse"]
