from ._pydantic_types.get_info_response import (
    GetInfoResponse as GetInfoResponse,
)
from ._pydantic_types.get_info_response import (
    ModelData as ModelData,
)

__all__ = ["ModelData", "GetInfoResponse"]
