"""Reading upstream releases: an archive (tar of any compression, or zip) or a directory of files, its members
streamed by name with errors that name the file and line; and the helpers every parser shares (member names
shown in messages, counts logged).
"""

from __future__ import annotations

import codecs
import contextlib
import gzip
import logging
import lzma
import os
import re
import tarfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from typing import IO, Callable, Iterable, Iterator

from xling.data.formats import FormatError, PathLike

logger = logging.getLogger(__name__)

_ARCHIVE = re.compile(r"\.(tar|tgz|tbz2?|txz|tar\.(gz|bz2|xz)|zip)$", re.IGNORECASE)
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error, lzma.LZMAError, gzip.BadGzipFile)


def is_archive(path: PathLike) -> bool:
    return bool(_ARCHIVE.search(str(path)))


@contextlib.contextmanager
def archive_errors(source: PathLike) -> Iterator[None]:
    """Turn a truncated or corrupt archive (any error while reading it) into a FormatError naming it."""
    try:
        yield
    except FormatError:
        raise
    except _ARCHIVE_ERRORS as exc:
        raise FormatError(
            f"{source}: truncated or corrupt archive ({type(exc).__name__}: {exc}); delete it and download it again"
        ) from None
    except OSError as exc:
        # bz2 reports a damaged stream as a bare OSError; keep real I/O errors (missing file) as they are
        if isinstance(exc, (FileNotFoundError, PermissionError, IsADirectoryError)):
            raise
        raise FormatError(f"{source}: truncated or corrupt archive ({exc}); delete it and download it again") from None


def _clean(name: str) -> str:
    return str(PurePosixPath(name.removeprefix("./")))


def iter_members(source: PathLike, want: Callable[[str], bool]) -> Iterator[tuple[str, IO[bytes]]]:
    """Yield (member name, binary stream) for each file of `source` whose name `want` accepts.

    `source`: a tar (any compression; read as a stream, once) or zip archive, a directory (names
    relative to it, walked in sorted order; `x.gz` is yielded as `x`, decompressed), or one
    file (named by its base name). Use inside `archive_errors(source)`.
    """
    source = Path(source)
    if source.is_dir() or not is_archive(source):
        paths = [Path(root, f) for root, dirs, files in os.walk(source) for f in files] if source.is_dir() else [source]
        for path in sorted(paths):
            name = path.relative_to(source).as_posix() if source.is_dir() else path.name
            opener: Callable = open
            if name.endswith(".gz") and not is_archive(name):
                name, opener = name[:-3], gzip.open
            if want(name):
                with opener(path, "rb") as handle:
                    yield name, handle
    elif source.suffix.lower() == ".zip":
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                name = _clean(info.filename)
                if not info.is_dir() and want(name):
                    with zf.open(info) as handle:
                        yield name, handle
    else:
        with tarfile.open(source, "r|*") as tf:
            for member in tf:
                name = _clean(member.name)
                if member.isfile() and want(name):
                    yield name, tf.extractfile(member)


def member_lines(handle: IO[bytes], display: str) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) from a binary stream, decoded as UTF-8 (errors name the line).

    Decodes by hand rather than with io.TextIOWrapper, which needs seekable streams that tar's
    stream mode does not provide.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    lineno, rest = 0, ""
    while True:
        chunk = handle.read(1 << 20)
        try:
            text = decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            line = lineno + 1 + rest.count("\n") + chunk[: max(exc.start, 0)].count(b"\n")
            raise FormatError(f"{display}:{line}: not valid UTF-8 ({exc.reason})") from None
        lines = (rest + text).split("\n")
        rest = lines.pop()
        for line in lines:
            lineno += 1
            line = line.removesuffix("\r")
            yield lineno, line.removeprefix("\ufeff") if lineno == 1 else line
        if not chunk:
            break
    if rest:
        lineno += 1
        rest = rest.removesuffix("\r")
        yield lineno, rest.removeprefix("\ufeff") if lineno == 1 else rest


def _display(source: PathLike, name: str) -> str:
    """How errors name a member: the file itself, or `archive[member]`."""
    source = Path(source)
    if source.is_dir():
        return str(source / name)
    if not is_archive(source):
        return str(source)
    return f"{source}[{name}]"


def _read_members(
    source: PathLike, names: Iterable[str], *, by_basename: bool = True, optional: Iterable[str] = ()
) -> dict[str, list[str]]:
    """Read whole (small) members by name into lists of lines; a missing required one is an error."""
    names, optional = set(names), set(optional)
    key = (lambda n: PurePosixPath(n).name) if by_basename else (lambda n: n)
    found: dict[str, list[str]] = {}
    with archive_errors(source):
        for name, handle in iter_members(source, lambda n: key(n) in names and key(n) not in found):
            found[key(name)] = [line for _, line in member_lines(handle, _display(source, name))]
            if set(found) == names:
                break
    missing = sorted(names - set(found) - optional)
    if missing:
        raise FormatError(f"{source}: missing {', '.join(missing)}")
    return found


def _log_counts(what: str, counts: dict) -> dict:
    logger.info("%s: %s", what, ", ".join(f"{k}={v}" for k, v in counts.items()))
    return counts


def _one_line(text: str) -> str:
    """Collapse any whitespace run (tabs, newlines) to one space: fields of line formats."""
    return " ".join(text.split())
