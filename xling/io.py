"""Small I/O helpers shared by every step: atomic outputs and line-numbered reading.

Outputs are written to a temporary file in the same directory, synced to disk and renamed on success, so an
interrupted job (or a crashed node) never leaves a truncated file that a rerun would take for finished work.
Every temporary file or folder of a job lives in one scratch folder named after the output it is for
(`.<output name>.scratch` beside it): the next attempt at that output removes what a killed one left there.
"""

from __future__ import annotations

import contextlib
import gzip
import os
import shutil
import tempfile
from pathlib import Path
from typing import IO, Iterator

_UMASK = os.umask(0)
os.umask(_UMASK)


def scratch_path(output: str | os.PathLike) -> Path:
    """The scratch folder of the job attempt writing `output`: `.<name>.scratch` beside it (same file system, so a
    rename out of it is atomic)."""
    output = Path(output)
    return output.parent / f".{output.name}.scratch"


@contextlib.contextmanager
def scratch(output: str | os.PathLike) -> Iterator[Path]:
    """A fresh scratch folder for writing `output`: whatever an earlier, killed attempt left there is removed
    first, and the folder itself when the block ends (one job writes one output at a time)."""
    folder = scratch_path(output)
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fsync(path: Path) -> None:
    with open(path, "rb") as handle:
        os.fsync(handle.fileno())


def fsync_dir(path: Path) -> None:
    """Sync a folder's entries (a rename into it) to disk; a file system that cannot is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path in `path`'s scratch folder; sync it and rename it onto `path` only if the block
    succeeds (without the sync a crashed node can leave an empty file under the final name)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with scratch(path) as folder:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
        os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs should be as readable as any other file
        tmp = Path(tmp)
        yield tmp
        if tmp.is_file():
            _fsync(tmp)
        os.replace(tmp, path)
        fsync_dir(path.parent)


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "w", encoding: str | None = "utf-8") -> Iterator[IO]:
    """Open a temporary file for writing; it replaces `path` only when the block succeeds."""
    if "b" in mode:
        encoding = None
    with atomic_path(path) as tmp:
        with open(tmp, mode, encoding=encoding) as handle:
            yield handle


def open_text(path: str | os.PathLike) -> IO[str]:
    """Open a UTF-8 text file for reading, gunzipping transparently when it ends in .gz."""
    path = Path(path)
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8", newline="\n")
    return open(path, encoding="utf-8", newline="\n")


def read_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its newline) so errors can name the line."""
    with open_text(path) as handle:
        for lineno, line in enumerate(handle, start=1):
            yield lineno, line.rstrip("\n").rstrip("\r")


def first_bad_utf8_line(path: str | os.PathLike) -> tuple[int, str] | None:
    """(line number, reason) of the first line that is not valid UTF-8, read again line by line in bytes: the text
    decoder fails a whole 8 KiB chunk ahead of the lines it handed out, so its line count is hundreds early. (A
    newline byte is never part of a multi-byte character, so each line decodes on its own.)"""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return lineno, f"{exc.reason} at byte {exc.start} of the line"
    return None


def read_word2vec_binary(path: str | os.PathLike):
    """Keys and float32 matrix of a word2vec binary file (a `count dim` line, then each key, a space and its
    `dim` little-endian float32s), as gensim's `KeyedVectors.save_word2vec_format(binary=True)` writes it:
    read without importing gensim, a second of start-up per job."""
    import numpy as np

    data = Path(path).read_bytes()
    header_end = data.index(b"\n")
    count, dim = (int(field) for field in data[:header_end].split())
    width = 4 * dim
    keys, offsets, start = [], [], header_end + 1
    for _ in range(count):
        space = data.find(b" ", start)
        if space == -1 or len(data) - (space + 1) < width:
            raise EOFError(f"{path}: {count} vectors announced, {len(keys)} found")
        keys.append(data[start:space].decode("utf-8").lstrip("\n"))  # gensim's reader drops a newline before a key
        offsets.append(space + 1)
        start = space + 1 + width
    if len(set(keys)) != len(keys):
        raise ValueError(f"{path}: duplicate keys")
    matrix = np.empty((count, dim), dtype=np.float32)
    for row, offset in enumerate(offsets):
        matrix[row] = np.frombuffer(data, dtype="<f4", count=dim, offset=offset)
    return keys, matrix
