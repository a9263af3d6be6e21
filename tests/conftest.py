"""Shared fixtures: the real public data beside the repository (../shared/data), skipped when absent, and
one finished run of presets/test.yaml for the workflow tests, and a builder of WikiAnn's upstream archive."""

import io
import tarfile
import zipfile
from pathlib import Path

import pytest
from workflow_helpers import TEST_PRESET, snakemake

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the test ids
def pytest_collection_modifyitems(items):
    """Under pytest-xdist (`make test` runs two workers, `--dist loadgroup`): a test file's tests stay on one worker,
    so its module fixtures run once, and every test of the test_run fixture joins one group, so the test preset
    runs once in the session."""
    for item in items:
        group = "test_run" if "test_run" in getattr(item, "fixturenames", ()) else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
def shared_data() -> Path:
    """Path to ../shared/data; the test is skipped cleanly when it is not there."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not present at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def test_run(tmp_path_factory) -> Path:
    """presets/test.yaml run once, end to end, in a fresh working directory, shared by every workflow test.
    Tests only read it or dry-run in it; a test that must change files copies it first."""
    workdir = tmp_path_factory.mktemp("workflow")
    done = snakemake("--configfile", str(TEST_PRESET), "--cores", "2", cwd=workdir, timeout=900)
    assert done.returncode == 0, done.stderr[-5000:]
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
