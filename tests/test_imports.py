"""xling.imports: the package files and third-party modules a rule's code imports, read from its source.

A planted package checks each import form against a hand-made expectation and against Python's own
import system (the modules a run really loads); the real scripts check the DAG's code inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from xling.imports import analyse

REPO = Path(__file__).resolve().parents[1]

PLANTED = {
    "xling/__init__.py": "",
    "xling/io.py": "import os\nimport numpy as np\n",
    "xling/a/__init__.py": "from .b import helper  # a package's __init__ runs on every import below it\n",
    "xling/a/b.py": "import xling.io\nfrom scipy.special import gammaln\n\n\ndef helper():\n    return gammaln\n",
    "xling/a/c.py": textwrap.dedent("""\
        from __future__ import annotations

        from . import b


        def lazy():
            from ..d import value  # relative, two levels up, inside a function
            import torch.nn
            return value
    """),
    "xling/d.py": "import yaml\n\nvalue = 1\n",
    "xling/e/__init__.py": "",
    "xling/e/static.py": "import gensim\n",
    "xling/e/other.py": "import pandas\n",  # a sibling nothing imports
    "xling/unused.py": "import sklearn\n",
    "scripts/run.py": textwrap.dedent("""\
        import json
        import pandas as pd

        from xling.a import c
        from xling.e import static  # a module named in `from package import name`
        from xling.a import helper  # a name, not a module: nothing more to follow
    """),
}
# Stand-ins for the third-party modules, so Python can run the planted code without them.
STUBS = {
    "numpy.py": "", "pandas.py": "", "yaml.py": "", "gensim.py": "", "sklearn.py": "",
    "scipy/__init__.py": "", "scipy/special.py": "gammaln = None\n",
    "torch/__init__.py": "", "torch/nn.py": "",
}  # fmt: skip


def plant(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.fixture
def planted(tmp_path) -> Path:
    plant(tmp_path / "site", STUBS)
    return plant(tmp_path / "repo", PLANTED)


def relative(paths, root: Path) -> set[str]:
    return {str(Path(p).relative_to(root)) for p in paths}


def test_script_imports_followed_through_the_package(planted):
    found = analyse(planted / "scripts/run.py", planted)
    assert relative(found.local, planted) == {
        "xling/__init__.py", "xling/io.py", "xling/a/__init__.py", "xling/a/b.py", "xling/a/c.py", "xling/d.py",
        "xling/e/__init__.py", "xling/e/static.py",
    }  # fmt: skip
    assert found.third_party == {"numpy", "pandas", "scipy", "torch", "yaml", "gensim"}


def test_module_entry_includes_itself_and_its_packages(planted):
    """`python -m xling.a.c` runs xling/__init__.py and xling/a/__init__.py, then c itself."""
    found = analyse(planted / "xling/a/c.py", planted)
    assert relative(found.local, planted) == {
        "xling/__init__.py", "xling/a/__init__.py", "xling/a/b.py", "xling/a/c.py", "xling/io.py", "xling/d.py",
    }  # fmt: skip
    assert found.third_party == {"numpy", "scipy", "torch", "yaml"}


def test_matches_the_modules_python_loads(planted):
    """The reference: run the planted script (and the lazy function) and list what Python imported."""
    probe = textwrap.dedent(f"""\
        import json, runpy, sys
        sys.path[:0] = [{str(planted)!r}, {str(planted.parent / "site")!r}]
        before = set(sys.modules)
        runpy.run_path({str(planted / "scripts/run.py")!r})
        sys.modules["xling.a.c"].lazy()
        new = [sys.modules[name] for name in set(sys.modules) - before]
        print(json.dumps(dict(
            local=sorted(m.__file__ for m in new if m.__name__.split(".")[0] == "xling"),
            third_party=sorted({{m.__name__.split(".")[0] for m in new
                                if (getattr(m, "__file__", None) or "").startswith({str(planted.parent / "site")!r})}}),
        )))
    """)
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    found = analyse(planted / "scripts/run.py", planted)
    assert sorted(map(str, found.local)) == loaded["local"]
    assert sorted(found.third_party) == loaded["third_party"]


def test_import_cycle_ends(tmp_path):
    root = plant(
        tmp_path,
        {
            "xling/__init__.py": "",
            "xling/p.py": "import xling.q\n",
            "xling/q.py": "from xling import p\n",
            "run.py": "import xling.p\n",
        },
    )
    assert relative(analyse(root / "run.py", root).local, root) == {"xling/__init__.py", "xling/p.py", "xling/q.py"}


@pytest.mark.parametrize("source, message", [
    ("import xling.missing\n", "run.py:2: imports xling.missing"),
    ("from xling.gone import f\n", "run.py:2: imports xling.gone"),
    ("from .. import p\n", "run.py:2: relative import outside the package"),
])  # fmt: skip
def test_bad_import_names_file_and_line(tmp_path, source, message):
    root = plant(tmp_path, {"xling/__init__.py": "", "run.py": f"import os\n{source}"})
    with pytest.raises(ImportError, match=message.replace(".", r"\.")):
        analyse(root / "run.py", root)


def test_relative_import_beyond_the_package(tmp_path):
    root = plant(tmp_path, {"xling/__init__.py": "", "xling/m.py": "from ... import x\n"})
    with pytest.raises(ImportError, match=r"m\.py:1: relative import beyond the top-level package"):
        analyse(root / "xling/m.py", root)


def test_real_scripts_reach_the_modules_they_use():
    """Word retrieval reaches the metrics through xling.evaluate.word_retrieval; the report does not."""
    retrieval = relative(analyse(REPO / "scripts/word_retrieval.py", REPO).local, REPO)
    assert {"xling/evaluate/metrics.py", "xling/evaluate/word_retrieval.py", "xling/represent/store.py"} <= retrieval
    assert not any(path.startswith("xling/report/") for path in retrieval)
    report = relative(analyse(REPO / "scripts/report.py", REPO).local, REPO)
    assert "xling/report/language.py" in report and "xling/evaluate/metrics.py" not in report
