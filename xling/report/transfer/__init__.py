from xling.report.transfer.common import DIGITS, check_cells, fmt_score, seed_stats, window_drop  # noqa: F401
