from typing_extensions import Literal, TypeAlias

StopReason: TypeAlias = Literal["length", "stop"]
