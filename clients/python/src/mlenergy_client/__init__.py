"""mlenergy-client: the ML.ENERGY data toolkit's records API (mlenergy-data 0.4.0) answered by an
mlenergy-server.

    from mlenergy_client import LLMRuns          # was: from mlenergy.data.records import LLMRuns
    runs = LLMRuns.from_server()                 # was: LLMRuns.from_hf()
    runs.task("gpqa").gpu_model("B200").to_dataframe()
"""

from ._http import (
    Client,
    InvalidRequestError,
    RawDataError,
    RawFileNotFoundError,
    ServerError,
)
from .modeling import ITLMixtureModel, LogisticModel
from .records import DiffusionRun, DiffusionRuns, LLMRun, LLMRuns

__all__ = [
    "Client",
    "DiffusionRun",
    "DiffusionRuns",
    "ITLMixtureModel",
    "InvalidRequestError",
    "LLMRun",
    "LLMRuns",
    "LogisticModel",
    "RawDataError",
    "RawFileNotFoundError",
    "ServerError",
]
__version__ = "0.1.0"
