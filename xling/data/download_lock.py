"""The trust-on-first-download lock file and the errors a download raises (xling.data.download uses both)."""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import yaml


class DownloadError(RuntimeError):
    """A download failed; the message names the URL and the HTTP status or cause."""


class ChecksumError(DownloadError):
    """The bytes did not match the expected sha256; the message names URL, expected and actual."""

    def __init__(self, source: str, expected: str, actual: str, how: str = ""):
        self.source, self.expected, self.actual = source, expected, actual
        extra = f" ({how})" if how else ""
        super().__init__(f"{source}: sha256 mismatch{extra}: expected {expected}, got {actual}")


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

    def record(
        self, url: str, sha256: str, size: int, how: str = "trust-on-first-download", final_url: str | None = None
    ) -> None:
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
                **({"final_url": final_url} if final_url and final_url != url else {}),
            }
            text = (
                "# Written by xling.data.download: sha256 of each file as first downloaded "
                "(trust-on-first-download).\n# Later downloads of the same URL must match. "
                "To pin one for everyone, copy it into resources/sources.yaml.\n"
                + yaml.safe_dump({"files": dict(sorted(entries.items()))}, sort_keys=False)
            )
            tmp = self.path.with_name(
                f".{self.path.name}.tmp"
            )  # one name: under the flock, a killed writer's is reused
            tmp.write_text(text, encoding="utf-8")
            os.replace(tmp, self.path)
