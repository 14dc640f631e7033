from ._pydantic_types.model_input import ModelInput as ModelInput

__all__ = ["ModelInput"]
