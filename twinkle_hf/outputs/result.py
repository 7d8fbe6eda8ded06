"""What an evaluation produced. Kept apart from the scoring stack, so that code which only reads
results (reports, comparisons) never imports torch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..schema import Predictions
from ..settings.config import EvalConfig

if TYPE_CHECKING:
    from ..models.loading import ModelInfo


@dataclass
class EvalResult:
    """What an evaluation produced: metrics, per-row predictions, and how it ran."""

    config: EvalConfig
    predictions: Predictions
    metrics: dict[str, Any]
    timing: dict[str, Any]
    model: ModelInfo | None = None
    skipped: dict[str, dict[str, Any]] = field(default_factory=dict)
    data_fingerprint: str | None = None  # sha256 of the evaluated rows (fingerprint.data_fingerprint)
    # per dataset named by --benchmark: the registry entry's summary, k, subjects and its resolved hash
    benchmarks: dict[str, dict[str, Any]] = field(default_factory=dict)
    # per dataset whose questions have several true options (TruthfulQA MC2): metrics.true_mass.true_mass
    true_mass: dict[str, dict[str, Any]] = field(default_factory=dict)
