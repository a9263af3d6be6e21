"""The real public data and the papers' published numbers beside the repository (../shared, or $XLING_SHARED): CI
has them, so a test that reads them fails when they are missing rather than passing by skipping; a checkout
without them sets XLING_NO_SHARED=1 to skip those tests instead (docs/testing.md)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("XLING_SHARED", REPO.parent / "shared"))


def require_shared(path: Path) -> Path:
    """`path` (under SHARED), failing the test when it is missing, or skipping it where XLING_NO_SHARED=1."""
    if path.exists():
        return path
    if os.environ.get("XLING_NO_SHARED") == "1":
        pytest.skip(f"{path} not present (XLING_NO_SHARED=1)")
    pytest.fail(
        f"{path} not present: ../shared must sit beside the checkout (or set XLING_SHARED to it); "
        "XLING_NO_SHARED=1 skips the tests that read it"
    )
