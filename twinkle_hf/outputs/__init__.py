"""Stage 6, outputs: files out and back in (results.json, predictions.jsonl, reports, pages, logs).

Read first: :func:`~twinkle_hf.outputs.report.write_outputs` (report.py). Predictions are written and
read by records.py, results.json's documents summarised in summary.py, pages drawn by html_report.py,
html_svg.py and html_compare.py, plots by plots.py; comparison.py compares runs; twinkle_results.py
writes Twinkle Eval's files; resume.py keeps the resume log, console_log.py run.log.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "compare_runs": "comparison", "comparison_markdown": "comparison", "console_log": "console_log",
    "write_comparison_html": "html_compare", "write_trend_html": "html_compare", "report_html": "html_report",
    "read_predictions": "records", "read_results": "records", "regenerate": "report", "results_document": "report",
    "write_outputs": "report", "EvalResult": "result", "RunLog": "resume", "run_identity": "resume",
    "console_summary": "summary", "write_twinkle_results": "twinkle_results",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
