from ._pydantic_types.stop_reason import StopReason as StopReason

__all__ = ["StopReason"]
