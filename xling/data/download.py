"""Pinned, checksummed, resumable downloads, and pre-staged local copies used in their place.

Why not `urllib.request.urlretrieve` or `wget`: a study that downloads tens of gigabytes on a
login node must survive cut connections (resume with an HTTP Range request from the partial file),
must never leave a truncated file that a rerun takes for finished work (stream to `<dest>.part`,
rename atomically after verification), and must notice when upstream bytes change (sha256 from
`resources/sources.yaml`, or trust-on-first-download: the first download records its sha256 in a
lock file and every later download of the same URL is checked against it).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import time
from pathlib import Path
from urllib.parse import urlsplit

import requests
import yaml

logger = logging.getLogger(__name__)

CHUNK = 1 << 20
NET_CHUNK = 1 << 16  # small network reads: a cut connection loses at most this much
USER_AGENT = "xling-downloader/0.1 (+https://github.com/; research workflow)"


class DownloadError(RuntimeError):
    """A download failed; the message names the URL and the HTTP status or cause."""


class ChecksumError(DownloadError):
    """The bytes did not match the expected sha256; the message names URL, expected and actual."""

    def __init__(self, source: str, expected: str, actual: str, how: str = ""):
        self.source, self.expected, self.actual = source, expected, actual
        extra = f" ({how})" if how else ""
        super().__init__(f"{source}: sha256 mismatch{extra}: expected {expected}, got {actual}")


def sha256_file(path: str | os.PathLike, chunk: int = CHUNK) -> str:
    """Hex sha256 of a file, read in chunks (files here reach gigabytes)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(chunk), b""):
            digest.update(block)
    return digest.hexdigest()


def rewrite_url(url: str, mirror: str | None) -> str:
    """Map `scheme://host/path?query` to `<mirror>/host/path?query` (the `wget -x` layout).

    A mirror is either an HTTP(S) base URL or a local directory (a plain path or `file://...`);
    a local mirror yields a path, which `download` copies instead of fetching.
    """
    if not mirror:
        return url
    parts = urlsplit(url)
    tail = f"{parts.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")
    return mirror.rstrip("/") + "/" + tail


def _local_path(location: str) -> Path | None:
    """The filesystem path of a `file://` URL or plain path, None for a network URL."""
    if location.startswith("file://"):
        return Path(location[len("file://"):])
    if "://" not in location:
        return Path(location)
    return None


class Lock:
    """Trust-on-first-download record: URL -> sha256 (and size, date), in a small YAML file.

    Concurrent Snakemake jobs share one lock file, so every update is a read-modify-write under
    an exclusive `flock` and the file is replaced atomically.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def _read(self) -> dict:
        if not self.path.exists():
            return {}
        data = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        entries = data.get("files", {})
        if not isinstance(entries, dict):
            raise ValueError(f"{self.path}: 'files' must be a mapping of URL -> entry")
        return entries

    def get(self, url: str) -> str | None:
        entry = self._read().get(url)
        return entry["sha256"] if entry else None

    @contextlib.contextmanager
    def _locked(self):
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".flock"), "w") as guard:
            fcntl.flock(guard, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(guard, fcntl.LOCK_UN)

    def record(self, url: str, sha256: str, size: int, how: str = "trust-on-first-download") -> None:
        """Record the sha256 of a first download; refuses to overwrite a different recorded value."""
        with self._locked():
            entries = self._read()
            old = entries.get(url)
            if old and old["sha256"] != sha256:
                raise ChecksumError(url, old["sha256"], sha256, f"lock file {self.path}")
            entries[url] = {
                "sha256": sha256,
                "bytes": int(size),
                "recorded": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "how": how,
            }
            text = (
                "# Written by xling.data.download: sha256 of each file as first downloaded "
                "(trust-on-first-download).\n# Later downloads of the same URL must match. "
                "To pin one for everyone, copy it into resources/sources.yaml.\n"
                + yaml.safe_dump({"files": dict(sorted(entries.items()))}, sort_keys=False)
            )
            tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)


class _Progress:
    """Rate-limited progress lines: bytes done, rate, ETA (a log line every `interval` seconds)."""

    def __init__(self, url: str, total: int | None, start: int, interval: float):
        self.url, self.total, self.done, self.interval = url, total, start, interval
        self.t0 = self.last = time.monotonic()
        self.start = start

    def update(self, n: int, force: bool = False) -> None:
        self.done += n
        now = time.monotonic()
        if not force and now - self.last < self.interval:
            return
        self.last = now
        rate = (self.done - self.start) / max(now - self.t0, 1e-9)
        if self.total:
            eta = (self.total - self.done) / rate if rate > 0 else float("inf")
            logger.info(
                "%s: %s / %s (%.1f%%) at %s/s, ETA %s", self.url, _size(self.done), _size(self.total),
                100.0 * self.done / self.total, _size(rate), _duration(eta),
            )
        else:
            logger.info("%s: %s at %s/s", self.url, _size(self.done), _size(rate))


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024
    return f"{n:.1f} GiB"


def _duration(s: float) -> str:
    if s == float("inf"):
        return "?"
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m{s % 60:02d}s" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


class _Incomplete(Exception):
    """The body ended before Content-Length bytes arrived (retry and resume)."""


class _Retryable(Exception):
    """A transient server answer (5xx, 429, 408): retry with back-off."""


_RETRY_STATUS = {408, 425, 429, 500, 502, 503, 504}


def _fetch_once(session, url: str, part: Path, timeout: float, progress_interval: float) -> None:
    """One HTTP attempt: resume `part` with Range when it has bytes; raise on failure."""
    offset = part.stat().st_size if part.exists() else 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    with session.get(url, headers=headers, stream=True, timeout=timeout, allow_redirects=True) as resp:
        status = resp.status_code
        if status == 416 and offset:
            # Nothing left to send: the partial file may already be complete (crash before rename).
            total = resp.headers.get("Content-Range", "").rpartition("/")[2]
            if total.isdigit() and int(total) == offset:
                return
            logger.warning("%s: HTTP 416 for bytes=%d-; restarting from 0", url, offset)
            part.unlink()
            raise _Incomplete("range not satisfiable")
        if status in _RETRY_STATUS:
            raise _Retryable(f"HTTP {status}")
        if status >= 400:
            raise DownloadError(f"{url}: HTTP {status} {resp.reason}")
        mode = "ab"
        if offset and status == 200:
            logger.warning("%s: server ignored the Range request (HTTP 200); restarting from 0", url)
            offset, mode = 0, "wb"
        elif offset and status == 206:
            start = resp.headers.get("Content-Range", "").partition(" ")[2].partition("-")[0]
            if start != str(offset):
                logger.warning("%s: unexpected Content-Range %r; restarting from 0",
                               url, resp.headers.get("Content-Range"))
                part.unlink()
                raise _Incomplete("bad Content-Range")
            logger.info("%s: resuming at byte %d", url, offset)
        elif not offset:
            mode = "wb"
        length = resp.headers.get("Content-Length")
        expected_end = offset + int(length) if length and length.isdigit() else None
        progress = _Progress(url, expected_end, offset, progress_interval)
        written = offset
        with open(part, mode) as handle:
            for block in resp.iter_content(NET_CHUNK):
                handle.write(block)
                written += len(block)
                progress.update(len(block))
        progress.update(0, force=True)
        if expected_end is not None and written < expected_end:
            raise _Incomplete(f"got {written} of {expected_end} bytes")


def download(
    url: str,
    dest: str | os.PathLike,
    sha256: str | None = None,
    lock: Lock | str | os.PathLike | None = None,
    retries: int = 5,
    backoff: float = 2.0,
    timeout: float = 60.0,
    mirror: str | None = None,
    progress_interval: float = 10.0,
    session: requests.Session | None = None,
) -> Path:
    """Download `url` to `dest`, verified, atomically; resume after cut connections.

    `sha256`: the expected digest (from sources.yaml); when None and `lock` is given, the digest
    recorded by an earlier download of this URL is expected, or, on a first download, recorded.
    `mirror`: base URL or local directory that replaces the URL's scheme (see `rewrite_url`); the
    lock and error messages use the canonical `url`. Retries sleep `backoff * 2**attempt` seconds.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    if lock is not None and not isinstance(lock, Lock):
        lock = Lock(lock)
    expected = sha256 or (lock.get(url) if lock else None)
    how = "sources.yaml" if sha256 else ("lock file" if expected else "")
    source = rewrite_url(url, mirror)
    label = url if source == url else f"{url} (via {source})"

    if dest.exists():
        if expected is None or sha256_file(dest) == expected:
            logger.info("%s: already present at %s", label, dest)
            return dest
        logger.warning("%s: %s exists but does not match its sha256; downloading again", label, dest)
        dest.unlink()

    local = _local_path(source)
    part = dest.with_name(dest.name + ".part")
    if local is not None:
        if not local.is_file():
            raise DownloadError(f"{label}: mirror file {local} does not exist")
        shutil.copyfile(local, part)
    else:
        own_session = session is None
        session = session or requests.Session()
        try:
            _fetch_with_retries(session, source, label, part, retries, backoff, timeout, progress_interval)
        finally:
            if own_session:
                session.close()

    actual = sha256_file(part)
    if expected and actual != expected:
        part.unlink()
        raise ChecksumError(label, expected, actual, how)
    size = part.stat().st_size
    if not expected and lock is not None:
        lock.record(url, actual, size)
        logger.info("%s: first download, recorded sha256 %s in %s", label, actual, lock.path)
    elif not expected:
        logger.warning("%s: no checksum known and no lock file: not verified (sha256 %s)", label, actual)
    os.replace(part, dest)
    logger.info("%s: %s verified (sha256 %s)", label, _size(size), actual)
    return dest


def _fetch_with_retries(session, source, label, part, retries, backoff, timeout, progress_interval):
    for attempt in range(retries + 1):
        try:
            _fetch_once(session, source, part, timeout, progress_interval)
            return
        except DownloadError:
            raise
        except (_Retryable, _Incomplete, requests.ConnectionError, requests.Timeout,
                requests.exceptions.ChunkedEncodingError) as err:
            if attempt == retries:
                raise DownloadError(
                    f"{label}: failed after {retries + 1} attempts: {err}"
                    + (f" (partial file kept for resuming: {part})" if part.exists() else "")
                ) from err
            wait = backoff * 2**attempt
            logger.warning("%s: attempt %d/%d failed (%s); retrying in %.1f s",
                           label, attempt + 1, retries + 1, err, wait)
            time.sleep(wait)


def stage(
    path: str | os.PathLike,
    dest: str | os.PathLike,
    sha256: str | None = None,
    mode: str = "symlink",
    label: str = "",
) -> Path:
    """Use a pre-staged local copy as `dest` (symlink or copy), verified when `sha256` is known.

    For clusters whose compute nodes have no internet: the same file, fetched elsewhere.
    """
    path, dest = Path(path).expanduser(), Path(dest)
    what = f"{label}: " if label else ""
    if not path.is_file():
        raise FileNotFoundError(f"{what}pre-staged copy {path} does not exist (set in config data.paths)")
    if sha256:
        actual = sha256_file(path)
        if actual != sha256:
            raise ChecksumError(f"{what}{path}", sha256, actual, "pre-staged copy")
        logger.info("%s%s verified (sha256 %s)", what, path, actual)
    else:
        logger.warning("%s%s used without verification: no checksum known", what, path)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    if tmp.exists() or tmp.is_symlink():
        tmp.unlink()
    if mode == "symlink":
        os.symlink(path.resolve(), tmp)
    elif mode == "copy":
        shutil.copyfile(path, tmp)
    else:
        raise ValueError(f"stage mode must be 'symlink' or 'copy', not {mode!r}")
    os.replace(tmp, dest)
    return dest
