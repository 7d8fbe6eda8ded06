"""PNG plots of a run (optional: needs matplotlib, `pip install twinkle_hf[plots]`)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

FILES = ("letter_dist.png", "accuracy_per_order.png")  # what draw writes into a run's folder
MISSING = "Plots were not drawn: matplotlib is not installed (pip install matplotlib)."


def available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def _figure():
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt

    return plt


def letter_plot(metrics: dict[str, Any], path: Path) -> None:
    """Predicted vs gold share per letter: a bias shows as a bar far above its gold mark."""
    plt = _figure()
    dist = metrics["letter_dist"]
    letters = list(dist)
    xs = range(len(letters))
    fig, ax = plt.subplots(figsize=(1.2 + 0.7 * len(letters), 3.2))
    ax.bar([x - 0.2 for x in xs], [100 * dist[k]["pred"] for k in letters], width=0.4, label="predicted")
    ax.bar([x + 0.2 for x in xs], [100 * dist[k]["gold"] for k in letters], width=0.4, label="gold")
    ax.set_xticks(list(xs), letters)
    ax.set_ylabel("% of answers")
    ax.set_title("Letter distribution")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def permutation_plot(metrics: dict[str, Any], path: Path) -> None:
    """Accuracy of each order index, with the mean and the original order for reference."""
    plt = _figure()
    acc = metrics["accuracy"]
    per = [100 * v for v in acc.get("per_order", [])]
    fig, ax = plt.subplots(figsize=(max(3.5, 0.5 * len(per) + 1.5), 3.2))
    ax.bar(range(len(per)), per, color="#4C72B0")
    ax.axhline(100 * acc["value"], color="black", linestyle="--", label="mean")
    original = (metrics.get("acc_original") or {}).get("value")
    if original is not None:
        ax.axhline(100 * original, color="#DD8452", label="original order")
    ax.set_xlabel("order index")
    ax.set_ylabel("accuracy %")
    ax.set_title("Accuracy per order")
    # below the axes: inside, it would cover the bars or the lines wherever they are (the original order near the top)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def draw(metrics: dict[str, Any], out: Path) -> list[str]:
    """The plots that have something to show, into ``out``; their file names (none if matplotlib is
    missing). A cloze run shows no letters, so it has no letter plot."""
    if not available() or metrics["accuracy"].get("value") is None:
        return []
    letters, orders = FILES
    drawn = []
    if metrics.get("letter_dist"):
        letter_plot(metrics, out / letters)
        drawn.append(letters)
    if metrics["accuracy"].get("per_order"):
        permutation_plot(metrics, out / orders)
        drawn.append(orders)
    return drawn


def trend_plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Accuracy, debiased accuracy and all_correct against the training step; a checkpoint significantly
    better or worse than the first (a trend row's ``vs_first``) gets a triangle on its accuracy."""
    plt = _figure()
    xs = [r["step"] if r.get("step") is not None else i for i, r in enumerate(rows)]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    for key, label in (("accuracy", "accuracy"), ("debiased_accuracy", "debiased"), ("all_correct", "all_correct"),
                       ("acc_original", "original order")):
        ys = [100 * r[key] if r.get(key) is not None else float("nan") for r in rows]
        ax.plot(xs, ys, marker="o", label=label)
    for mark, shape, colour in (("better", "^", "#2a9d4b"), ("worse", "v", "#c0392b")):  # against the first (Holm)
        hits = [(x, 100 * r["accuracy"]) for x, r in zip(xs, rows) if r.get("vs_first") == mark
                and r.get("accuracy") is not None]
        if hits:
            ax.scatter(*zip(*hits), marker=shape, s=120, color=colour, zorder=3,
                       label=f"{mark} than the first")
    ax.set_xlabel("step" if all(r.get("step") is not None for r in rows) else "checkpoint")
    ax.set_ylabel("%")
    ax.set_title("Checkpoint trend")
    # below the axes, as in permutation_plot: inside, it would cover the points
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False, fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
