"""Cells of the reports' tables: numbers formatted one way for report.md, the console and the HTML
pages, and a metric block read one way (value, stderr, and the reason where it does not apply)."""

from __future__ import annotations

from typing import Any

NA = "n/a"  # a metric the data cannot support: shown with its reason, never as a number


def pct(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{100 * value:.{digits}f}"


def num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def metric_value(metrics: dict[str, Any], key: str) -> tuple[float | None, float | None, str]:
    """(value, stderr, reason) of a metric block (every block has one shape: ``value``, with
    ``stderr`` where it has an error bar and ``reason`` where it does not apply)."""
    block = metrics.get(key)
    if not block:
        return None, None, "not computed"
    return block.get("value"), block.get("stderr"), block.get("reason", "")


def markdown_rows(header: list[str], rows: list[Any]) -> list[str]:
    """A markdown table from a header and rows of cells."""
    return ["| " + " | ".join(header) + " |", "|---" * len(header) + "|"] + [
        "| " + " | ".join(row) + " |" for row in rows]
