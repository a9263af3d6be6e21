"""A download's lock stays trustworthy: a stale `.part` is resumed only when the server confirms (If-Range) that
it still serves the same file, a file assembled from two responses is never locked on first download unless one
whole response agrees, and redirects are logged, recorded and refused when they leave https. Against the local
server of tests/test_download.py."""

from __future__ import annotations

import logging

import pytest
import requests
import yaml
from test_download import FAST, PAYLOAD, Server, plant_partial, sha

from xling.data import download as dl

OLD = PAYLOAD[::-1]  # what upstream served before it changed


@pytest.fixture
def server():
    srv = Server()
    srv.files["g.bin"] = PAYLOAD
    yield srv
    srv.stop()


def locked(lock, url):
    return yaml.safe_load(lock.read_text())["files"][url]


def test_stale_partial_without_validator_starts_over_and_locks_upstreams_hash(server, tmp_path):
    """The issue's reproduction: 50,000 bytes of old content in g.bin.part, no record of what it was."""
    (tmp_path / "g.bin.part").write_bytes(OLD[:50_000])
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/g.bin"
    dest = dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[0]["range"] is None
    assert locked(lock, url)["sha256"] == sha(PAYLOAD)
    dl.download(url, tmp_path / "again" / "g.bin", lock=lock, **FAST)  # a later clean download agrees


@pytest.mark.parametrize("validators", ["both", "etag", "last_modified"])
def test_stale_partial_of_a_changed_file_is_sent_whole_by_if_range(server, tmp_path, validators):
    server.validators = validators
    plant_partial(server, tmp_path, OLD[:50_000], OLD, name="g.bin")
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/g.bin"
    dest = dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert server.requests[0]["range"] == "bytes=50000-" and server.requests[0]["if_range"]
    assert len(server.requests) == 1  # HTTP 200 with the whole new file: nothing spliced, nothing to re-check
    assert locked(lock, url)["sha256"] == sha(PAYLOAD)


def test_server_ignoring_if_range_is_caught_by_its_validators(server, tmp_path):
    """A server that honours Range but not If-Range sends a 206 of the new file: its ETag gives it away."""
    server.honour_if_range = False
    plant_partial(server, tmp_path, OLD[:50_000], OLD, name="g.bin")
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/g.bin"
    dest = dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert [r["range"] for r in server.requests] == ["bytes=50000-", None]
    assert locked(lock, url)["sha256"] == sha(PAYLOAD)


def test_server_without_validators_never_resumes(server, tmp_path):
    server.validators = "none"
    server.mode = "cut_once"
    url = f"{server.url}/g.bin"
    dest = dl.download(url, tmp_path / "g.bin", sha256=sha(PAYLOAD), **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert [r["range"] for r in server.requests] == [None, None]  # the cut partial file was not spliced


def test_resumed_first_download_is_checked_against_one_whole_response(server, tmp_path):
    server.mode = "cut_once"
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/g.bin"
    dest = dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert [r["range"] is None for r in server.requests] == [True, False, True]
    assert locked(lock, url)["sha256"] == sha(PAYLOAD)


def test_file_changed_between_two_responses_is_never_locked(server, tmp_path):
    """A server that lies (same validators, new bytes, Range honoured) splices old and new content: the check
    against one whole response refuses it, and the lock stays empty."""
    server.files["g.bin"] = OLD
    server.mode = "cut_once"
    server.honour_if_range = False
    server.validators_of = lambda body: {"ETag": '"always-the-same"'}
    server.swap = (1, "g.bin", PAYLOAD)
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/g.bin"
    with pytest.raises(dl.ChecksumError, match="resumed first download"):
        dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)
    assert not lock.exists()
    assert not (tmp_path / "g.bin").exists() and not (tmp_path / "g.bin.part").exists()
    dest = dl.download(url, tmp_path / "g.bin", lock=lock, **FAST)  # the rerun gets the one file, whole
    assert dest.read_bytes() == PAYLOAD and locked(lock, url)["sha256"] == sha(PAYLOAD)


def test_redirect_to_another_host_is_logged_and_recorded(server, tmp_path, caplog):
    port = server.url.rsplit(":", 1)[1]
    other = f"http://localhost:{port}/g.bin"
    server.redirects["moved.bin"] = other
    lock = tmp_path / "lock.yaml"
    url = f"{server.url}/moved.bin"
    with caplog.at_level(logging.INFO, logger="xling.data.download"):
        dest = dl.download(url, tmp_path / "moved.bin", lock=lock, **FAST)
    assert dest.read_bytes() == PAYLOAD
    assert any("another host" in r.getMessage() and other in r.getMessage() for r in caplog.records)
    entry = locked(lock, url)
    assert entry["final_url"] == other and entry["sha256"] == sha(PAYLOAD)


class _HttpsToLocal(requests.adapters.HTTPAdapter):
    """Sends https://127.0.0.1 requests to the plain-HTTP test server, so a redirect's scheme can be tested."""

    def send(self, request, **kwargs):
        request.url = request.url.replace("https://", "http://", 1)
        return super().send(request, **kwargs)


def test_redirect_from_https_to_http_is_refused(server, tmp_path):
    server.redirects["g.bin"] = f"{server.url}/plain.bin"
    server.files["plain.bin"] = OLD
    session = requests.Session()
    session.mount("https://", _HttpsToLocal())
    lock = tmp_path / "lock.yaml"
    url = server.url.replace("http://", "https://") + "/g.bin"
    with pytest.raises(dl.DownloadError, match="leaves https"):
        dl.download(url, tmp_path / "g.bin", lock=lock, session=session, **FAST)
    assert [r["path"] for r in server.requests] == ["/g.bin"]  # the http URL was never asked for
    assert not lock.exists() and not (tmp_path / "g.bin").exists()
