"""Script jobs that compute nothing with torch start without importing it.

Importing torch is about 1.5 s of CPU, most of the start-up of a small job; the demo runs some twenty such
jobs (word retrieval per model, the shards' reduction, the fastText baselines, the tables by frequency and
part of speech). Each script's module-level imports run in a fresh interpreter, as its job does.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
WITHOUT_TORCH = (
    "word_retrieval",
    "word_retrieval_pos",
    "bert_reduce",
    "mono_fasttext",
    "fasttext_retrieval",
    "contextual_retrieval_frequency",
    "contextual_retrieval_pos",
    "static_word_vectors",
)


def _module_imports(script: Path) -> str:
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return "\n".join(ast.unparse(node) for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom)))


@pytest.mark.parametrize("name", WITHOUT_TORCH)
def test_script_starts_without_torch(name):
    code = _module_imports(ROOT / "scripts" / f"{name}.py")
    code += "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'torch')))"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    assert not loaded, f"scripts/{name}.py imports torch at start-up ({loaded[:3]} ...)"


def test_the_check_sees_torch():
    """The check above can fail: a script that needs torch is seen importing it."""
    code = _module_imports(ROOT / "scripts" / "finetune.py") + "\nimport sys\nprint('torch' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    assert run.stdout.strip().splitlines()[-1] == "True"
