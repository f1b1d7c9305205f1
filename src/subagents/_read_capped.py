"""Reading a settings file whole, up to a size limit, without hanging on special files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["FileTooLargeError", "NotARegularFileError", "read_capped"]


class FileTooLargeError(Exception):
    """The file holds more than ``limit`` bytes (``size`` is what was found, at least)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"{size:,} bytes; the limit is {limit:,}")
        self.size = size
        self.limit = limit


class NotARegularFileError(Exception):
    """The path is a directory, a FIFO, a device...: nothing a settings file can be."""


def read_capped(path: Path, limit: int) -> bytes:
    """The bytes of the regular file ``path``, refusing files larger than ``limit``.

    Raises :class:`FileTooLargeError`, :class:`NotARegularFileError` or ``OSError``. Opening is
    non-blocking, so a FIFO put where a file is expected is refused instead of waited on.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotARegularFileError(str(path))
        if info.st_size > limit:
            raise FileTooLargeError(info.st_size, limit)
        chunks = [os.read(fd, info.st_size + 1)]
        total = len(chunks[0])
        while chunks[-1] and total <= limit:  # it grew since fstat: read on, just past the limit
            chunks.append(os.read(fd, 1 << 16))
            total += len(chunks[-1])
    finally:
        os.close(fd)
    if total > limit:
        raise FileTooLargeError(total, limit)
    return b"".join(chunks)
