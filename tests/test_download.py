"""xling.data.download against a local HTTP server (127.0.0.1, a thread) that can cut connections,
ignore Range or If-Range, change its file between two requests, redirect, or fail with 404/500 - the
failures a long download on a login node meets."""

from __future__ import annotations

import dataclasses
import hashlib
import http.server
import json
import os
import threading

import pytest
import yaml

from xling.data import download as dl
from xling.data import sources as src
from xling.data.formats import read_wikiann
from xling.data.upstream import wikiann_to_canonical

PAYLOAD = bytes(range(256)) * 4096  # 1 MiB, every byte value


class Server:
    """Serves `files` (name -> bytes) with Range support; `mode` changes its behaviour per test."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.mode = "ok"  # ok | cut | cut_once | ignore_range | 404 | 500 | 500_once
        self.validators = "both"  # which of ETag / Last-Modified it sends: both | etag | last_modified | none
        self.honour_if_range = True
        self.swap: tuple[int, str, bytes] | None = None  # after that many requests, serve these bytes under name
        self.redirects: dict[str, str] = {}  # name -> Location (absolute, or a path on this server)
        self.requests: list[dict] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests.append(
                    {
                        "path": self.path,
                        "range": self.headers.get("Range"),
                        "if_range": self.headers.get("If-Range"),
                        "host": self.headers.get("Host"),
                    }
                )
                name = self.path.lstrip("/")
                mode = server.mode
                if server.swap and len(server.requests) > server.swap[0]:
                    server.files[server.swap[1]] = server.swap[2]
                if name in server.redirects:
                    self.send_response(302)
                    self.send_header("Location", server.redirects[name])
                    self.send_header("Content-Length", "0")
                    return self.end_headers()
                if mode == "404" or name not in server.files:
                    return self._empty(404)
                if mode == "500" or (mode == "500_once" and len(server.requests) == 1):
                    return self._empty(500)
                body = server.files[name]
                validators = server.validators_of(body)
                start, status = 0, 200
                rng = self.headers.get("Range")
                if_range = self.headers.get("If-Range")
                if if_range and server.honour_if_range and if_range not in validators.values():
                    rng = None  # the file changed: RFC 9110 says send all of it
                if rng and mode != "ignore_range":
                    start = int(rng.split("=")[1].split("-")[0])
                    if start >= len(body):
                        self.send_response(416)
                        self.send_header("Content-Range", f"bytes */{len(body)}")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    status = 206
                chunk = body[start:]
                self.send_response(status)
                for header, value in validators.items():
                    self.send_header(header, value)
                self.send_header("Content-Length", str(len(chunk)))
                if status == 206:
                    self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
                self.end_headers()
                cut = mode == "cut" or (mode == "cut_once" and len(server.requests) == 1)
                if cut:
                    # Send part of the body, then drop the connection.
                    self.wfile.write(chunk[: len(chunk) // 3])
                    self.wfile.flush()
                    self.close_connection = True
                    self.connection.shutdown(2)
                    return
                self.wfile.write(chunk)

            def _empty(self, code):
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def validators_of(self, body: bytes) -> dict[str, str]:
        """ETag and Last-Modified from the content (so a changed file changes both)."""
        digest = hashlib.sha256(body).digest()
        both = {
            "ETag": f'"{digest.hex()[:16]}"',
            "Last-Modified": f"Mon, 01 Jan 2024 {digest[0] % 24:02d}:{digest[1] % 60:02d}:{digest[2] % 60:02d} GMT",
        }
        keep = {"both": ("ETag", "Last-Modified"), "etag": ("ETag",), "last_modified": ("Last-Modified",), "none": ()}[
            self.validators
        ]
        return {k: v for k, v in both.items() if k in keep}

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    srv = Server()
    srv.files["data.bin"] = PAYLOAD
    yield srv
    srv.stop()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


FAST = dict(backoff=0.001, timeout=5, progress_interval=0.0)


def test_download_verified(server, tmp_path):
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "out" / "data.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert not (tmp_path / "out" / "data.bin.part").exists()


def test_resume_after_cut_connection(server, tmp_path):
    server.mode = "cut_once"
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert len(server.requests) == 2
    assert server.requests[0]["range"] is None
    # The second request resumes from the bytes kept before the cut (at most 64 KiB are lost).
    resumed_at = int(server.requests[1]["range"].removeprefix("bytes=").rstrip("-"))
    assert 0 < resumed_at <= len(PAYLOAD) // 3


def plant_partial(server, tmp_path, content: bytes, validators_of: bytes | None = None, name="data.bin"):
    """A `.part` left by an earlier run, with the validators the server sent for `validators_of` beside it."""
    (tmp_path / f"{name}.part").write_bytes(content)
    if validators_of is not None:
        v = server.validators_of(validators_of)
        (tmp_path / f"{name}.part.json").write_text(
            json.dumps({"url": f"{server.url}/{name}", "etag": v.get("ETag"), "last_modified": v.get("Last-Modified")})
        )


@pytest.mark.parametrize("validators", ["both", "etag", "last_modified"])
def test_resume_from_partial_file_left_by_an_earlier_run(server, tmp_path, validators):
    server.validators = validators
    plant_partial(server, tmp_path, PAYLOAD[:1000], PAYLOAD)
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[0]["range"] == "bytes=1000-"
    assert server.requests[0]["if_range"] in server.validators_of(PAYLOAD).values()
    assert not (tmp_path / "data.bin.part.json").exists()


def test_complete_partial_file_gets_416_and_is_accepted(server, tmp_path):
    plant_partial(server, tmp_path, PAYLOAD, PAYLOAD)
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD


def test_server_ignoring_range_restarts(server, tmp_path):
    server.mode = "ignore_range"
    plant_partial(server, tmp_path, b"garbage that is not a prefix", PAYLOAD)
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[0]["range"] is not None  # it asked, the server answered 200


def test_checksum_mismatch_names_url_expected_and_actual(server, tmp_path):
    wrong = "0" * 64
    url = f"{server.url}/data.bin"
    with pytest.raises(dl.ChecksumError) as err:
        dl.download(url, tmp_path / "data.bin", sha256=wrong, **FAST)
    message = str(err.value)
    assert url in message and wrong in message and sha(PAYLOAD) in message
    assert not (tmp_path / "data.bin").exists()
    assert not (tmp_path / "data.bin.part").exists()


def test_http_404_names_url_and_status(server, tmp_path):
    url = f"{server.url}/missing.bin"
    with pytest.raises(dl.DownloadError) as err:
        dl.download(url, tmp_path / "missing.bin", **FAST)
    assert url in str(err.value) and "404" in str(err.value)
    assert len(server.requests) == 1  # a 404 is final, not retried


def test_transient_500_is_retried_with_backoff(server, tmp_path, monkeypatch):
    sleeps = []
    monkeypatch.setattr(dl.time, "sleep", sleeps.append)
    server.mode = "500_once"
    dest = dl.download(f"{server.url}/data.bin", tmp_path / "data.bin", sha256=sha(PAYLOAD), backoff=0.5, timeout=5)
    assert dest.read_bytes() == PAYLOAD
    assert sleeps == [0.5]


def test_persistent_500_gives_up_after_retries(server, tmp_path, monkeypatch):
    sleeps = []
    monkeypatch.setattr(dl.time, "sleep", sleeps.append)
    server.mode = "500"
    url = f"{server.url}/data.bin"
    with pytest.raises(dl.DownloadError) as err:
        dl.download(url, tmp_path / "data.bin", retries=3, backoff=0.5, timeout=5)
    assert url in str(err.value) and "500" in str(err.value) and "4 attempts" in str(err.value)
    assert sleeps == [0.5, 1.0, 2.0]  # exponential back-off
    assert len(server.requests) == 4


def test_trust_on_first_download_records_then_enforces(server, tmp_path):
    lock = tmp_path / "sources.lock.yaml"
    url = f"{server.url}/data.bin"
    dl.download(url, tmp_path / "a" / "data.bin", lock=lock, **FAST)
    recorded = yaml.safe_load(lock.read_text())["files"][url]
    assert recorded["sha256"] == sha(PAYLOAD) and recorded["bytes"] == len(PAYLOAD)

    server.files["data.bin"] = PAYLOAD[::-1]  # upstream changed
    with pytest.raises(dl.ChecksumError) as err:
        dl.download(url, tmp_path / "b" / "data.bin", lock=lock, **FAST)
    assert sha(PAYLOAD) in str(err.value) and sha(PAYLOAD[::-1]) in str(err.value)
    assert not (tmp_path / "b" / "data.bin").exists()


def test_existing_dest_is_verified_not_refetched(server, tmp_path):
    dest = tmp_path / "data.bin"
    dest.write_bytes(PAYLOAD)
    dl.download(f"{server.url}/data.bin", dest, sha256=sha(PAYLOAD), **FAST)
    assert server.requests == []


def test_mirror_rewrites_url(server, tmp_path):
    assert (
        dl.rewrite_url("https://dl.example.org/a/b.zip?x=1", "http://m.local/base/")
        == "http://m.local/base/dl.example.org/a/b.zip?x=1"
    )
    assert dl.rewrite_url("https://dl.example.org/a.zip", None) == "https://dl.example.org/a.zip"
    # The mirror serves upstream.example.org/data.bin; the lock keeps the canonical URL.
    server.files["upstream.example.org/data.bin"] = PAYLOAD
    lock = tmp_path / "lock.yaml"
    canonical = "https://upstream.example.org/data.bin"
    dl.download(canonical, tmp_path / "data.bin", lock=lock, mirror=server.url, **FAST)
    assert server.requests[0]["path"] == "/upstream.example.org/data.bin"
    assert canonical in yaml.safe_load(lock.read_text())["files"]


def test_wikiann_from_a_mirror_is_verified_then_parsed(server, panx_zip, tmp_path):
    """The pinned WikiAnn entry of sources.yaml fetched through a mirror on 127.0.0.1 that serves a small archive
    in the upstream layout: the published sha256 rejects it (naming both checksums); with the archive's own
    checksum it downloads and parses into the canonical files."""
    archive = panx_zip(
        tmp_path / "panx_dataset.zip",
        {
            "en": {"train": "en:Ana\tB-PER\nen:Lima\tB-LOC\n\n", "dev": "en:IBM\tB-ORG\n\n", "test": "en:x\tO\n\n"},
            "fr": {"train": "fr:a\tO\n\n", "dev": "fr:Paris\tB-LOC\n\n", "test": "fr:Le\tO\nfr:Monde\tB-ORG\n\n"},
        },
    ).read_bytes()
    ref = src.Sources({"cache": str(tmp_path / "cache"), "mirror": server.url}).file("wikiann", "panx")
    server.files[ref.url.split("://", 1)[1]] = archive
    options = dict(lock=None, mirror=server.url, backoff=0.001, timeout=5)
    with pytest.raises(dl.ChecksumError) as err:
        src.fetch(ref, **options)
    assert ref.sha256 in str(err.value) and sha(archive) in str(err.value)
    assert server.requests[0]["path"] == "/s3.amazonaws.com/datasets.huggingface.co/wikiann/1.1.0/panx_dataset.zip"
    out = src.fetch(dataclasses.replace(ref, sha256=sha(archive)), **options)
    assert out == tmp_path / "cache" / "wikiann" / "panx_dataset.zip"
    counts = wikiann_to_canonical(out, tmp_path / "data" / "wikiann", ["en", "fr"])
    assert counts == {f"{lang}.{split}": 1 for lang in ("en", "fr") for split in ("train", "dev", "test")}
    assert read_wikiann(tmp_path / "data" / "wikiann" / "fr.test.tsv") == [(["Le", "Monde"], ["O", "B-ORG"])]


def test_local_directory_mirror(tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "upstream.example.org").mkdir(parents=True)
    (mirror / "upstream.example.org" / "f.txt").write_bytes(b"hello\n")
    dest = dl.download(
        "https://upstream.example.org/f.txt", tmp_path / "f.txt", sha256=sha(b"hello\n"), mirror=str(mirror)
    )
    assert dest.read_bytes() == b"hello\n"
    with pytest.raises(dl.DownloadError, match="does not exist"):
        dl.download("https://upstream.example.org/g.txt", tmp_path / "g.txt", mirror=str(mirror))


@pytest.mark.parametrize("mode", ["symlink", "copy"])
def test_stage_uses_local_copy_without_network(tmp_path, mode, monkeypatch):
    monkeypatch.setattr(dl.requests, "Session", None)  # any network use would fail
    src = tmp_path / "staged" / "file.txt"
    src.parent.mkdir()
    src.write_bytes(b"abc")
    dest = dl.stage(src, tmp_path / "cache" / "file.txt", sha256=sha(b"abc"), mode=mode)
    assert dest.read_bytes() == b"abc"
    assert dest.is_symlink() == (mode == "symlink")
    with pytest.raises(dl.ChecksumError, match="pre-staged"):
        dl.stage(src, tmp_path / "cache" / "other.txt", sha256="1" * 64)


def test_stage_missing_path_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError) as err:
        dl.stage(tmp_path / "nowhere.txt", tmp_path / "x.txt", label="muse_full/ru")
    assert "nowhere.txt" in str(err.value) and "muse_full/ru" in str(err.value)


def test_sha256_file(tmp_path):
    f = tmp_path / "f"
    f.write_bytes(PAYLOAD)
    assert dl.sha256_file(f) == sha(PAYLOAD)
    assert os.path.getsize(f) == len(PAYLOAD)
