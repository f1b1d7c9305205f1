"""An operating-system sandbox for the Bash tool: bubblewrap (``bwrap``) on Linux.

Off by default; ``[sandbox] enabled = true`` in ``config.toml`` turns it on. Inside it a
command sees the whole file system read-only except the workspace, a private ``/tmp`` and
``/dev``; the protected paths of the workspace (``.git``, ``.subagents``, ``.mcp.json``, ...,
see :mod:`subagents.tools.protected`) stay read-only even there; and it has no network unless
``[sandbox] network = true``. Its processes live in their own process namespace and die with
the tool call.

The permission layer decides *whether* a command runs; the sandbox limits *what it can touch*
when it does, which is what makes ``bypassPermissions`` tolerable for commands a model writes.
Protected paths that do not exist yet cannot be mounted read-only, so a sandboxed command can
still create, say, a missing ``.mcp.json``; the permission layer's check on the Write tool is
not weakened by that, but a shell command is not checked path by path.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from subagents.tools.protected import SQLITE_SIDECARS, protected_names

__all__ = ["BashSandbox", "sandbox_problem"]

_PROBE_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class BashSandbox:
    """How to wrap one command: the workspace it may write, what stays read-only in it
    (checked at each command: a ``.git`` made by the last one is protected in the next), and
    whether it may use the network."""

    workspace: Path
    network: bool = False
    protected: tuple[Path, ...] = ()

    @classmethod
    def for_workspace(
        cls, workspace: Path, *, network: bool = False, extra_read_only: Iterable[Path] = ()
    ) -> BashSandbox:
        root = Path(os.path.realpath(workspace))
        candidates = [root / name for name in protected_names()]
        candidates += [Path(os.path.realpath(path)) for path in extra_read_only]
        candidates += [
            path.with_name(f"{path.name}{s}") for path in candidates for s in SQLITE_SIDECARS
        ]
        inside = [path for path in dict.fromkeys(candidates) if _inside(root, path)]
        return cls(root, network, tuple(inside))

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run inside the sandbox."""
        workspace = str(self.workspace)
        command = [
            _bwrap(),
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--ro-bind",
            "/",
            "/",
            "--dev",
            "/dev",
            "--proc",
            "/proc",
            "--tmpfs",
            "/tmp",
            "--bind",
            workspace,
            workspace,
        ]
        for path in self.protected:
            if path.exists():
                command += ["--ro-bind", str(path), str(path)]
        if not self.network:
            command.append("--unshare-net")
        command += ["--chdir", workspace, "--", *argv]
        return command


def _inside(root: Path, path: Path) -> bool:
    return path != root and path.is_relative_to(root)


def _bwrap() -> str:
    return shutil.which("bwrap") or "bwrap"


def sandbox_problem() -> str | None:
    """Why the sandbox cannot run here (``None`` when it can): bubblewrap is missing, or the
    system does not let it create namespaces. Probed once per process and ``PATH``."""
    return _probe(os.environ.get("PATH", ""))


@functools.cache
def _probe(path: str) -> str | None:
    bwrap = shutil.which("bwrap", path=path)
    if bwrap is None:
        return "bubblewrap (bwrap) is not installed"
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--unshare-net", "--unshare-pid", "true"],
            capture_output=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"bubblewrap could not be started ({error})"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip() or f"exit code {done.returncode}"
        return f"bubblewrap cannot create a sandbox here ({reason})"
    return None
