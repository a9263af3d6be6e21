"""Hub checkpoints staged on the login node (xling.models.hub, rules/checkpoints.smk): downloaded at the pinned
revision into the run's folder, jobs offline.

The hub is a stand-in on 127.0.0.1 serving the hub's own URLs (huggingface_hub honours HF_ENDPOINT): the model
info at a revision (/api/models/<id>/revision/<rev>), the file tree at a commit and the files under
/<id>/resolve/<rev>/<file>, with the headers huggingface_hub reads (X-Repo-Commit, ETag, sizes). Its repository is a
real tiny BERT (save_pretrained) beside TensorFlow and ONNX copies that staging must leave out, at two commits.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from xling.models.hub import RECORD, checkpoint_files

REPO = Path(__file__).resolve().parents[1]
REPO_ID = "org/tiny-bert"
OLD, NEW = "a" * 40, "b" * 40  # two commits; the branch `main` points at NEW


class StandInHub(BaseHTTPRequestHandler):
    files: dict[str, dict[str, bytes]] = {}  # commit -> path -> bytes
    requests: list[str] = []

    def log_message(self, *args):  # quiet
        pass

    def _commit(self, revision: str) -> str | None:
        revision = unquote(revision)
        return NEW if revision == "main" else revision if revision in self.files else None

    def _json(self, body) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _missing(self) -> None:
        self.send_response(404)
        self.send_header("X-Error-Code", "RevisionNotFound")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):
        self._answer(body=True)

    def do_HEAD(self):
        self._answer(body=False)

    def _answer(self, body: bool) -> None:
        path = unquote(urlparse(self.path).path)
        self.requests.append(f"{self.command} {path}")
        api = f"/api/models/{REPO_ID}/"
        if path.startswith(api + "revision/"):
            commit = self._commit(path[len(api + "revision/") :])
            if commit is None:
                return self._missing()
            return self._json(
                {
                    "id": REPO_ID,
                    "modelId": REPO_ID,
                    "sha": commit,
                    "private": False,
                    "siblings": [{"rfilename": name} for name in sorted(self.files[commit])],
                }
            )
        if path.startswith(api + "tree/"):
            commit = self._commit(path[len(api + "tree/") :].split("/")[0])
            if commit is None:
                return self._missing()
            return self._json(
                [
                    {"type": "file", "path": name, "size": len(data), "oid": hashlib.sha1(data).hexdigest()}
                    for name, data in sorted(self.files[commit].items())
                ]
            )
        prefix = f"/{REPO_ID}/resolve/"
        if path.startswith(prefix):
            revision, _, name = path[len(prefix) :].partition("/")
            commit = self._commit(revision)
            if commit is None or name not in self.files[commit]:
                return self._missing()
            data = self.files[commit][name]
            self.send_response(200)
            self.send_header("X-Repo-Commit", commit)
            self.send_header("ETag", f'"{hashlib.sha256(data).hexdigest()}"')
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if body:
                self.wfile.write(data)
            return None
        return self._missing()


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    """The stand-in hub's address; its repository: the tiny BERT's files at NEW, a different config at OLD."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_checkpoints import save_checkpoint

    saved = save_checkpoint("bert", tmp_path_factory.mktemp("tiny") / "bert")
    files = {p.name: p.read_bytes() for p in saved.iterdir() if p.is_file()}
    files.update({"tf_model.h5": b"tensorflow", "onnx/model.onnx": b"onnx", "README.md": b"# tiny"})
    old = dict(files, **{"config.json": files["config.json"].replace(b"{", b'{"old": true, ', 1)})
    StandInHub.files = {NEW: files, OLD: old}
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandInHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


def _environment(endpoint: str, tmp_path: Path) -> dict:
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HF_", "HUGGINGFACE_"))}
    return {
        **env,
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp_path / "hf-home"),
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, (str(REPO), os.environ.get("PYTHONPATH")))),
    }


def _stage(endpoint: str, tmp_path: Path, revision: str | None, out: Path, offline: bool = False):
    """stage_checkpoint in a fresh process: huggingface_hub reads HF_ENDPOINT and HF_HUB_OFFLINE at import."""
    code = (
        "import sys; from xling.models.hub import stage_checkpoint; "
        "print(stage_checkpoint(sys.argv[1], sys.argv[2] or None, sys.argv[3]))"
    )
    env = _environment(endpoint, tmp_path) | ({"HF_HUB_OFFLINE": "1"} if offline else {})
    return subprocess.run(
        [sys.executable, "-c", code, REPO_ID, revision or "", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_checkpoint_files_take_one_copy_of_the_weights():
    assert checkpoint_files(
        [
            "config.json",
            "vocab.txt",
            "model.safetensors",
            "pytorch_model.bin",
            "tf_model.h5",
            "flax_model.msgpack",
            "onnx/model.onnx",
            "README.md",
            "sentencepiece.bpe.model",
        ]
    ) == ["config.json", "model.safetensors", "sentencepiece.bpe.model", "vocab.txt"]
    assert checkpoint_files(["config.json", "pytorch_model.bin"]) == ["config.json", "pytorch_model.bin"]
    with pytest.raises(ValueError, match="no PyTorch weights"):
        checkpoint_files(["config.json", "tf_model.h5"])


def test_a_checkpoint_is_staged_at_its_pinned_revision_and_loads_offline(hub, tmp_path):
    out = tmp_path / "results" / "models" / "hf" / "org--tiny-bert"
    done = _stage(hub, tmp_path, OLD, out)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == OLD
    record = json.loads((out / RECORD).read_text())
    assert (record["name"], record["revision"], record["commit"]) == (REPO_ID, OLD, OLD)
    staged = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert "tf_model.h5" not in staged and "onnx/model.onnx" not in staged and "README.md" not in staged
    assert set(record["files"]) <= set(staged) and "model.safetensors" in staged
    for name in record["files"]:
        assert (out / name).read_bytes() == StandInHub.files[OLD][name], name
    assert not out.with_name(out.name + ".part").exists()
    # the staged directory is what a job loads, offline and without the stand-in
    load = (
        "import sys; from xling.models.pretrained import load_pretrained; "
        "m = load_pretrained(sys.argv[1]); print(type(m.model).__name__, m.model.config.old)"
    )
    env = _environment("http://127.0.0.1:9", tmp_path) | {"HF_HUB_OFFLINE": "1"}
    loaded = subprocess.run(
        [sys.executable, "-c", load, str(out)], capture_output=True, text=True, env=env, timeout=300
    )
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.split()[-2:] == ["BertForMaskedLM", "True"]


def test_a_branch_is_resolved_to_its_commit_and_recorded(hub, tmp_path):
    out = tmp_path / "staged"
    done = _stage(hub, tmp_path, "main", out)
    assert done.returncode == 0, done.stderr
    assert json.loads((out / RECORD).read_text())["commit"] == NEW
    assert (out / "config.json").read_bytes() == StandInHub.files[NEW]["config.json"]


def test_an_unknown_revision_and_an_offline_process_stage_nothing(hub, tmp_path):
    done = _stage(hub, tmp_path, "c" * 40, tmp_path / "x")
    assert done.returncode != 0 and not (tmp_path / "x").exists()
    done = _stage(hub, tmp_path, OLD, tmp_path / "y", offline=True)
    assert done.returncode != 0 and "HF_HUB_OFFLINE" in done.stderr and not (tmp_path / "y").exists()


@pytest.mark.workflow
def test_the_workflow_stages_a_hub_checkpoint_on_the_submit_host(hub, tmp_path):
    """`snakemake fetch_checkpoints` (local rules) stages each hub id of language.hf_models at its pin into the run's
    folder, with the workflow's own offline default in force for every other job."""
    overrides = tmp_path / "hf.yaml"
    overrides.write_text(
        json.dumps({"run": "hub", "language": {"hf_models": [REPO_ID], "hf_revisions": {REPO_ID: OLD}}})
    )
    command = [
        sys.executable,
        "-m",
        "snakemake",
        "--snakefile",
        str(REPO / "Snakefile"),
        "--directory",
        str(tmp_path),
        "--cores",
        "1",
        "fetch_checkpoints",
        "--configfile",
        str(REPO / "presets/demo.yaml"),
        str(overrides),
    ]
    done = subprocess.run(command, capture_output=True, text=True, env=_environment(hub, tmp_path), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    staged = tmp_path / "results/hub/models/hf/org--tiny-bert"
    assert json.loads((staged / RECORD).read_text())["commit"] == OLD
    assert "localrule fetch_checkpoint" in done.stderr


def test_parsing_the_workflow_turns_the_hub_off_for_its_jobs(monkeypatch, tmp_path):
    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    monkeypatch.setenv("HF_HUB_OFFLINE", "")  # restored (unset) after the test
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.chdir(tmp_path)  # Snakemake changes into the working directory
    with SnakemakeApi(OutputSettings()) as api:
        # reading the property parses the Snakefile
        _ = api.workflow(
            ResourceSettings(),
            ConfigSettings(configfiles=[REPO / "presets/demo.yaml"]),
            snakefile=REPO / "Snakefile",
            workdir=tmp_path,
        )._workflow
    assert os.environ["HF_HUB_OFFLINE"] == "1"
