"""Logging set-up for Snakemake `script:` entry points: everything goes to the rule's `log:` file."""

from __future__ import annotations

import logging
import sys
from pathlib import Path


def setup_logging(log_path: str | Path | None = None, level: int = logging.INFO) -> None:
    """Send the library's log records (and uncaught errors) to `log_path` and stderr."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_path:
        Path(log_path).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_path, mode="w", encoding="utf-8"))
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers, force=True
    )

    def log_uncaught(exc_type, exc, tb):
        logging.getLogger("xling").error("failed", exc_info=(exc_type, exc, tb))

    sys.excepthook = log_uncaught
