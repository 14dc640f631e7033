from ._pydantic_types.load_weights_response import LoadWeightsResponse as LoadWeightsResponse

__all__ = ["LoadWeightsResponse"]
