"""Pinned, checksummed, resumable downloads, and pre-staged local copies used in their place.

Why not `urllib.request.urlretrieve` or `wget`: a study that downloads tens of gigabytes on a
login node must survive cut connections (resume with an HTTP Range request from the partial file),
must never leave a truncated file that a rerun takes for finished work (stream to `<dest>.part`,
rename atomically after verification), and must notice when upstream bytes change (sha256 from
`resources/sources.yaml`, or trust-on-first-download: the first download records its sha256 in a
lock file and every later download of the same URL is checked against it).

A partial file is resumed only when the server confirms it still serves the same file: the ETag or
Last-Modified of the response that started it is kept beside it (`<dest>.part.json`) and sent as
`If-Range`; without one the download starts over. A file assembled from more than one response is
never trusted on first download: its sha256 is recorded only when one uninterrupted response gives
the same digest. Redirects are followed by hand: each hop is logged, https -> http is refused, and
the lock records the final URL beside the one asked for.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import requests

from xling.data.download_lock import ChecksumError, DownloadError, Lock
from xling.io import scratch

logger = logging.getLogger(__name__)

__all__ = ["ChecksumError", "DownloadError", "Lock", "download", "rewrite_url", "sha256_file", "stage"]

CHUNK = 1 << 20
NET_CHUNK = 1 << 16  # small network reads: a cut connection loses at most this much
USER_AGENT = "xling-downloader/0.1 (+https://github.com/; research workflow)"


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
        return Path(location[len("file://") :])
    if "://" not in location:
        return Path(location)
    return None


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
                "%s: %s / %s (%.1f%%) at %s/s, ETA %s",
                self.url,
                _size(self.done),
                _size(self.total),
                100.0 * self.done / self.total,
                _size(rate),
                _duration(eta),
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
MAX_REDIRECTS = 10


@dataclasses.dataclass
class _PartState:
    """What the partial file holds: `spliced` when its bytes came from more than one response (a resume), and the
    URL the last response finally came from (after redirects)."""

    spliced: bool = False
    final_url: str = ""


def _validator_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def _validators(headers) -> dict:
    """The response's strong ETag and Last-Modified: what If-Range may quote (a weak ETag may not)."""
    etag = headers.get("ETag") or ""
    return {"etag": etag if etag and not etag.startswith("W/") else None, "last_modified": headers.get("Last-Modified")}


def _saved_validator(part: Path, url: str) -> dict | None:
    """The validators stored beside `part` when it was started from `url`, None when there are none to trust."""
    path = _validator_path(part)
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(saved, dict) or saved.get("url") != url:
        return None
    return saved if saved.get("etag") or saved.get("last_modified") else None


def _discard(part: Path) -> None:
    part.unlink(missing_ok=True)
    _validator_path(part).unlink(missing_ok=True)


def _same_file(saved: dict, headers) -> bool:
    """Whether a response's validators (where it sends any) agree with those stored beside the partial file."""
    now = _validators(headers)
    for key in ("etag", "last_modified"):
        if saved.get(key) and now[key] and saved[key] != now[key]:
            return False
    return True


def _get(session, url: str, headers: dict, timeout: float):
    """GET following redirects by hand: each hop logged, https -> http refused (DownloadError)."""
    current = url
    for _ in range(MAX_REDIRECTS + 1):
        resp = session.get(current, headers=headers, stream=True, timeout=timeout, allow_redirects=False)
        if not resp.is_redirect:
            return resp, current
        target = urljoin(current, resp.headers["Location"])
        resp.close()
        if urlsplit(current).scheme == "https" and urlsplit(target).scheme != "https":
            raise DownloadError(f"{url}: redirect from {current} to {target} leaves https; refused")
        if urlsplit(target).netloc != urlsplit(current).netloc:
            logger.warning("%s: redirected to another host: %s", url, target)
        else:
            logger.info("%s: redirected to %s", url, target)
        current = target
    raise DownloadError(f"{url}: more than {MAX_REDIRECTS} redirects")


def _fetch_once(
    session, url: str, part: Path, timeout: float, progress_interval: float, state: _PartState | None = None
) -> None:
    """One HTTP attempt: resume `part` with Range + If-Range when it has bytes whose validator is known (else start
    over); raise on failure. Updates `state` (spliced or not, final URL)."""
    state = state if state is not None else _PartState()
    offset = part.stat().st_size if part.exists() else 0
    saved = _saved_validator(part, url) if offset else None
    if offset and saved is None:
        logger.warning("%s: partial file %s has no ETag or Last-Modified to check it against; starting over", url, part)
        _discard(part)
        offset = 0
    headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
        headers["If-Range"] = saved["etag"] or saved["last_modified"]
    resp, final = _get(session, url, headers, timeout)
    with resp:
        state.final_url = final
        if final != url:
            logger.info("%s: final URL %s", url, final)
        status = resp.status_code
        if status == 416 and offset:
            # Nothing left to send: the partial file may already be complete (crash before rename).
            total = resp.headers.get("Content-Range", "").rpartition("/")[2]
            if total.isdigit() and int(total) == offset and _same_file(saved, resp.headers):
                state.spliced = True  # written by an earlier run, perhaps in several responses
                return
            logger.warning("%s: HTTP 416 for bytes=%d-; restarting from 0", url, offset)
            _discard(part)
            raise _Incomplete("range not satisfiable")
        if status in _RETRY_STATUS:
            raise _Retryable(f"HTTP {status}")
        if status >= 400:
            raise DownloadError(f"{url}: HTTP {status} {resp.reason}")
        mode = "ab"
        if status == 200:
            if offset:
                logger.warning(
                    "%s: the server sent the whole file (HTTP 200: changed since the partial file, or "
                    "no Range support); restarting from 0",
                    url,
                )
            offset, mode, state.spliced = 0, "wb", False
            _validator_path(part).write_text(json.dumps({"url": url, **_validators(resp.headers)}), encoding="utf-8")
        elif offset and status == 206:
            start = resp.headers.get("Content-Range", "").partition(" ")[2].partition("-")[0]
            if start != str(offset) or not _same_file(saved, resp.headers):
                logger.warning(
                    "%s: Content-Range %r, ETag %r, Last-Modified %r do not continue the partial file; "
                    "restarting from 0",
                    url,
                    resp.headers.get("Content-Range"),
                    resp.headers.get("ETag"),
                    resp.headers.get("Last-Modified"),
                )
                _discard(part)
                raise _Incomplete("partial response of another file")
            logger.info("%s: resuming at byte %d", url, offset)
            state.spliced = True
        else:
            raise DownloadError(f"{url}: unexpected HTTP {status} for a request without Range")
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


def _remote_sha256(session, url: str, timeout: float) -> str:
    """sha256 of one uninterrupted full response (nothing written): the check a resumed first download needs."""
    resp, _ = _get(session, url, {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}, timeout)
    with resp:
        if resp.status_code != 200:
            raise DownloadError(f"{url}: HTTP {resp.status_code} while checking a resumed download")
        digest = hashlib.sha256()
        for block in resp.iter_content(NET_CHUNK):
            digest.update(block)
        return digest.hexdigest()


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
    state = _PartState(final_url=source)
    own_session = session is None and local is None
    session = session or (requests.Session() if local is None else None)
    try:
        if local is not None:
            if not local.is_file():
                raise DownloadError(f"{label}: mirror file {local} does not exist")
            shutil.copyfile(local, part)
        else:
            _fetch_with_retries(session, source, label, part, retries, backoff, timeout, progress_interval, state)

        actual = sha256_file(part)
        if expected and actual != expected:
            _discard(part)
            raise ChecksumError(label, expected, actual, how)
        size = part.stat().st_size
        if not expected and lock is not None:
            if state.spliced:
                # Bytes of two responses: trust them only if one whole response gives the same digest.
                logger.info("%s: resumed first download; checking it against one uninterrupted response", label)
                whole = _remote_sha256(session, source, timeout)
                if whole != actual:
                    _discard(part)
                    raise ChecksumError(
                        label,
                        whole,
                        actual,
                        "resumed first download against a whole response; partial file removed, nothing recorded",
                    )
            lock.record(url, actual, size, final_url=state.final_url if state.final_url != source else None)
            logger.info("%s: first download, recorded sha256 %s in %s", label, actual, lock.path)
        elif not expected:
            logger.warning("%s: no checksum known and no lock file: not verified (sha256 %s)", label, actual)
    finally:
        if own_session:
            session.close()
    os.replace(part, dest)
    _validator_path(part).unlink(missing_ok=True)
    logger.info("%s: %s verified (sha256 %s)", label, _size(size), actual)
    return dest


def _fetch_with_retries(session, source, label, part, retries, backoff, timeout, progress_interval, state):
    for attempt in range(retries + 1):
        try:
            _fetch_once(session, source, part, timeout, progress_interval, state)
            return
        except DownloadError:
            raise
        except (
            _Retryable,
            _Incomplete,
            requests.ConnectionError,
            requests.Timeout,
            requests.exceptions.ChunkedEncodingError,
        ) as err:
            if attempt == retries:
                raise DownloadError(
                    f"{label}: failed after {retries + 1} attempts: {err}"
                    + (f" (partial file kept for resuming: {part})" if part.exists() else "")
                ) from err
            wait = backoff * 2**attempt
            logger.warning(
                "%s: attempt %d/%d failed (%s); retrying in %.1f s", label, attempt + 1, retries + 1, err, wait
            )
            time.sleep(wait)


def stage(
    path: str | os.PathLike, dest: str | os.PathLike, sha256: str | None = None, mode: str = "symlink", label: str = ""
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
    if mode not in ("symlink", "copy"):
        raise ValueError(f"stage mode must be 'symlink' or 'copy', not {mode!r}")
    with scratch(dest) as folder:
        tmp = folder / dest.name
        if mode == "symlink":
            os.symlink(path.resolve(), tmp)
        else:
            shutil.copyfile(path, tmp)
        os.replace(tmp, dest)
    return dest
