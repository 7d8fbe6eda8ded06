"""Stage 5, metrics: pure functions from predictions to numbers.

Read first: :func:`~twinkle_hf.metrics.summarize.summarize_groups` (summarize.py: accuracy, acc_original,
letters). Bias metrics are in bias.py over the dense rows of rows.py, PriDe in pride.py, majority vote
and pass@k in sampling.py, error bars in uncertainty.py; extract.py reads a generated answer's letter.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "bias_metrics": "bias", "extract": "extract", "pass_at_k": "sampling", "MetricOptions": "summarize",
    "headline_scalars": "summarize", "summarize_groups": "summarize", "Z95": "uncertainty",
    "clustered_stderr": "uncertainty", "question_means": "uncertainty",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
