"""Shared fixtures: the real public data beside the repository (../shared/data; tests/shared_files.py), and
one finished run of presets/test.yaml for the workflow tests, a builder of WikiAnn's upstream archive, and tiny
Hugging Face checkpoints of three architectures."""

import ast
import functools
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest
from shared_files import SHARED, require_shared
from tiny_checkpoints import ARCHITECTURES, one_torch_thread, save_checkpoint
from workflow_helpers import TEST_PRESET, snakemake

REPO = Path(__file__).resolve().parents[1]


#: files whose tests continue a copy of the shared run: their own work units, scheduled last, so that the worker
#: that takes them finds the run finished (or nearly) instead of waiting for it
CONTINUING = ("test_code_reruns.py",)
#: files whose tests mostly wait on SLURM's scheduling (seconds a job): in the shared run's unit, right after the
#: run, so their waits overlap the other worker's preset run (whose jobs take both cores) instead of ending the
#: suite beside a one-core test with a core left idle
WAITING = ("test_slurm.py",)
#: files with a whole preset run of their own (the real preset's, about 10 min alone; the demo's targets): sent out
#: right after the shared run's unit, so the other worker starts them while the first builds the shared run,
#: instead of finishing the suite with them
OWN_RUNS = ("test_real_preset.py", "test_workflow.py")


def scope_of(rootpath: Path, nodeid: str) -> str:
    """The work unit of a test under `make test`: "test_run" for a test that reads the shared run (directly or
    through a fixture of its file or of this conftest) and for WAITING's, "continued:<file>" for one of
    CONTINUING's, else its file."""
    path = nodeid.partition("::")[0]
    if Path(path).name in WAITING:
        return "test_run"
    if function_name(nodeid) not in tests_requesting(str(rootpath / path), "test_run"):
        return path
    return f"continued:{path}" if Path(path).name in CONTINUING else "test_run"


def function_name(nodeid: str) -> str:
    """The test function of a test id (without its class and parameters)."""
    return nodeid.partition("::")[2].split("::")[-1].split("[")[0]


def pytest_collection_modifyitems(config, items):
    """The shared run's unit first, then the files with a preset run of their own (OWN_RUNS), the continuing
    files last, the other files between, the larger first (so the work units go out in that order: xdist's
    reordering by size is turned off below). In the shared run's unit, the first test that reads the run builds
    it; WAITING's tests come first, the one that reads the run leading, so the rest of them follow the run."""
    scopes = [scope_of(config.rootpath, item.nodeid) for item in items]
    sizes = {scope: scopes.count(scope) for scope in scopes}
    rank = {
        item.nodeid: 0
        if scope == "test_run"
        else 3
        if scope.startswith("continued:")
        else 1
        if Path(scope).name in OWN_RUNS
        else 2
        for item, scope in zip(items, scopes, strict=True)
    }

    def in_unit(item) -> int:
        path = item.nodeid.partition("::")[0]
        if Path(path).name not in WAITING:
            return 2
        return 0 if function_name(item.nodeid) in tests_requesting(str(config.rootpath / path), "test_run") else 1

    order = {
        id(item): (rank[item.nodeid], -sizes[scope], in_unit(item)) for item, scope in zip(items, scopes, strict=True)
    }
    items.sort(key=lambda item: order[id(item)])


@pytest.hookimpl(optionalhook=True)  # xdist's hook: without xdist, pytest runs the tests serially
def pytest_xdist_make_scheduler(config, log):
    """`make test` runs two pytest-xdist workers with `--dist loadscope`, scoped here (scope_of): the tests that read
    the shared run are one work unit, sent out first, so the worker that builds the run reads it; every other test
    stays with its file (so a module fixture, the demo's acceptance run, runs once). The units go out in the order
    of pytest_collection_modifyitems. xdist's own `loadgroup` cannot do this under pytest 9: its group suffix on
    item ids no longer reaches the scheduler."""
    if config.getvalue("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    config.option.loadscopereorder = False

    class TestRunScope(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(config.rootpath, nodeid)

    return TestRunScope(config, log)


@functools.cache
def tests_requesting(path: str, fixture: str) -> frozenset[str]:
    """The test functions of a file that request `fixture`, directly or through a fixture of the file or of the
    conftest.py beside it."""
    arguments = {}
    for source in (Path(path).parent / "conftest.py", Path(path)):
        if source.exists():
            arguments.update(
                {
                    node.name: {a.arg for a in node.args.args}
                    for node in ast.walk(ast.parse(source.read_text(encoding="utf-8")))
                    if isinstance(node, ast.FunctionDef)
                }
            )
    users, grown = {fixture}, True
    while grown:
        found = {name for name, args in arguments.items() if args & users} - users
        users |= found
        grown = bool(found)
    tests = {
        node.name
        for node in ast.walk(ast.parse(Path(path).read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test")
    }
    return frozenset(users & tests - {fixture})


@pytest.fixture
def shared_data() -> Path:
    """Path to ../shared/data; the test fails when it is not there (skips where XLING_NO_SHARED=1)."""
    return require_shared(SHARED / "data")


@pytest.fixture
def torch_one_thread():
    """torch on one thread within the test (tiny models: threads only contend for the shared cores)."""
    with one_torch_thread():
        yield


@pytest.fixture(scope="session", params=ARCHITECTURES)
def tiny_checkpoint(request, tmp_path_factory) -> Path:
    """A tiny random masked LM saved as a Hugging Face checkpoint, once per architecture (tests/tiny_checkpoints.py:
    BERT with WordPiece, XLM-R with SentencePiece, DistilBERT); a test that takes it runs on each."""
    return save_checkpoint(request.param, tmp_path_factory.mktemp("checkpoint") / request.param)


@pytest.fixture(scope="session")
def test_run(tmp_path_factory) -> Path:
    """presets/test.yaml run once per session, end to end, in a fresh working directory, shared by every workflow
    test: the first pytest-xdist worker that needs it runs it, another waits for it (a lock), then reads it too.
    Tests only read it or dry-run in it; a test that must change files copies it first (workflow_helpers.copy_run)."""
    from filelock import FileLock

    session = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        session = session.parent  # the session's folder, above each worker's
    workdir, finished, failed = session / "test-run", session / "test-run.finished", session / "test-run.failed"
    with FileLock(session / "test-run.lock"):
        if failed.exists():
            pytest.fail(f"the shared test-preset run failed on another worker:\n{failed.read_text()}")
        if not finished.exists():
            workdir.mkdir()
            done = snakemake(
                "--configfile", str(TEST_PRESET), "--cores", "2", cwd=workdir, timeout=1800
            )  # two xdist workers share the cores
            if done.returncode != 0:
                failed.write_text(done.stderr[-5000:], encoding="utf-8")
            assert done.returncode == 0, done.stderr[-5000:]
            finished.touch()
    return workdir


@pytest.fixture
def panx_zip():
    """make(path, {lang: {member: text}}) -> path: a zip laid out as WikiAnn's `panx_dataset.zip` (one
    `{lang}.tar.gz` per language holding members such as `train`, `dev`, `test`)."""

    def make(path: Path, languages: dict[str, dict[str, str]]) -> Path:
        with zipfile.ZipFile(path, "w") as zf:
            for lang, members in languages.items():
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
                    for name, text in members.items():
                        data = text.encode()
                        info = tarfile.TarInfo(name)
                        info.size = len(data)
                        tf.addfile(info, io.BytesIO(data))
                zf.writestr(f"{lang}.tar.gz", buffer.getvalue())
        return path

    return make
