"""position_bias: the randomisation test's calibration and power by simulation (no model), its
effect size and verdict on hand-made predictions, and its n/a cases."""

from __future__ import annotations

import numpy as np
import pytest
from test_bias import build, cyclic, question

from twinkle_hf.metrics.bias import bias_metrics
from twinkle_hf.metrics.position import NO_SHUFFLE, detectable_from, p_text, position_test
from twinkle_hf.schema import GenerationColumns, Predictions

K = 4


def simulate(rng: np.random.Generator, n: int, design: str, orders: int = K, lean: float = 0.0,
             stochastic: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One simulated run: n questions of K options under ``design`` orders ("cyclic": the K rotations
    of a random base order; "random": ``orders`` independent random orders). Each question has its
    own preference over contents (Dirichlet 0.5); a row chooses a content from it (``stochastic``)
    or always its favourite, and with probability ``lean`` takes whatever is shown first instead:
    a preference of lean x (1 - 1/K) points for A. Returns question codes, k, perm, pred."""
    if design == "cyclic":
        base = np.argsort(rng.random((n, K)), axis=1)
        perm = np.stack([np.roll(base, -s, axis=1) for s in range(K)], axis=1)
    else:
        perm = np.argsort(rng.random((n, orders, K)), axis=2)
    m = perm.shape[1]
    preference = rng.dirichlet(np.full(K, 0.5), size=n)
    if stochastic:
        content = np.minimum((rng.random((n, m, 1)) > preference.cumsum(1)[:, None, :]).sum(2), K - 1)
    else:
        content = np.repeat(preference.argmax(1)[:, None], m, axis=1)
    pred = np.take_along_axis(np.argsort(perm, axis=2), content[..., None], axis=2)[..., 0]
    pred = np.where(rng.random((n, m)) < lean, 0, pred)
    return np.repeat(np.arange(n), m), np.full(n * m, K), perm.reshape(n * m, K), pred.reshape(-1)


def p_values(design: str, n: int, runs: int, lean: float = 0.0, orders: int = K, stochastic: bool = True,
             seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([position_test(*simulate(rng, n, design, orders, lean, stochastic), seed=i,
                                   n_permutations=199).p_value for i in range(runs)])


@pytest.mark.parametrize(("design", "orders", "stochastic"), [
    ("cyclic", K, True),  # clustered: a question's rotations share its content preference
    ("cyclic", K, False),  # degenerate null: every re-draw gives the same T (the tie rule keeps p uniform)
    ("random", 1, True),  # one order per question
])
def test_content_only_chooser_gives_uniform_p_values(design, orders, stochastic):
    p = p_values(design, 50, 1000, orders=orders, stochastic=stochastic)
    assert 0.03 <= np.mean(p < 0.05) <= 0.07
    assert 0.16 <= np.mean(p < 0.2) <= 0.24
    assert np.all(np.histogram(p, bins=5, range=(0, 1))[0] > 160)  # no lump anywhere on [0, 1]


def test_a_planted_ten_point_first_position_preference_is_detected():
    lean = 0.10 / (1 - 1 / K)  # 10 points above the 1/K that position-blind content choice gives A
    p = p_values("cyclic", 200, 100, lean=lean)
    assert np.mean(p < 0.05) >= 0.8


@pytest.mark.parametrize(("design", "orders"), [("cyclic", K), ("random", 1)])
def test_detectable_from_is_about_the_size_that_detects_a_five_point_preference(design, orders):
    """The sentence "95% of models with a 5-point preference would be detected from about N questions",
    checked: runs of N questions with such a preference are detected about 95% of the time."""
    rng = np.random.default_rng(7)
    q, k, perm, pred = simulate(rng, 300, design, orders)
    n = detectable_from(position_test(q, k, perm, pred, seed=0, n_permutations=199), 300, len(q) / 300)
    assert n is not None and n > 10
    detected = np.mean(p_values(design, n, 100, lean=0.05 / (1 - 1 / K), orders=orders, seed=3) < 0.05)
    assert detected >= 0.85
    smaller = np.mean(p_values(design, max(2, n // 4), 100, lean=0.05 / (1 - 1 / K), orders=orders, seed=3) < 0.05)
    assert smaller < detected  # the size matters: a quarter of it detects less often


def _always_a(n: int) -> Predictions:
    """n questions under cyclic orders, a model that answers A whatever is shown."""
    rows = []
    for i in range(n):
        perms = cyclic(K, [(i + j) % K for j in range(K)])
        rows += question(f"q{i}", perms, gold=0, picks=[p[0] for p in perms])
    return build(rows)


def _content_only(n: int) -> Predictions:
    """n questions under cyclic orders, a model that always picks original option i % K."""
    rows = []
    for i in range(n):
        rows += question(f"q{i}", cyclic(K), gold=0, picks=[i % K] * K)
    return build(rows)


def test_always_a_is_strong_evidence_with_its_effect_in_points():
    block = bias_metrics(_always_a(30), n_boot=0)["position_bias"]
    assert block["letter"] == "A" and block["value"] == pytest.approx(0.75)  # 100% of answers, 25% expected
    assert block["letters"]["B"] == {"predicted": 0.0, "expected": 0.25, "excess": -0.25}
    assert block["p_value"] < 0.001 and block["exceed"] == 0
    assert block["verdict"].startswith("strong evidence of a preference for A (p < 0.001): A is chosen 75.0 points")


def test_content_only_is_no_evidence_and_says_what_would_be_detected():
    block = bias_metrics(_content_only(40), n_boot=0)["position_bias"]
    assert block["value"] == pytest.approx(0.0) and block["statistic"] == pytest.approx(0.0)
    assert block["verdict"].startswith("no evidence of a position preference at this sample size (p = ")
    assert f"detected from about {block['detectable_from']} questions)" in block["verdict"]


def test_same_inputs_same_p_and_the_seed_matters():
    preds = _always_a(6)
    one, two = (bias_metrics(preds, n_boot=0, seed=s)["position_bias"]["p_value"] for s in (0, 0))
    assert one == two
    mixed = build([r for i in range(8) for r in question(f"q{i}", cyclic(K), 0, [0, 1, 0, i % K])])
    ps = {bias_metrics(mixed, n_boot=0, seed=s)["position_bias"]["p_value"] for s in range(4)}
    assert len(ps) > 1


def test_no_shuffling_is_na_with_the_reason():
    rows = [r for i in range(5) for r in question(f"q{i}", [[0, 1, 2, 3]], gold=1, picks=[0])]
    block = bias_metrics(build(rows), n_boot=0)["position_bias"]
    assert block == {"value": None, "reason": NO_SHUFFLE}
    assert bias_metrics(_always_a(3), n_boot=0, mode="none")["position_bias"]["value"] is None


def test_generation_mode_leaves_unparsed_rows_out_and_counts_them():
    preds = _always_a(10)
    pred = preds.pred.copy()
    pred[::4] = -1  # no letter extracted
    n = len(preds)
    gen = Predictions(**{**preds.__dict__, "pred": pred, "letters": None,
                         "generation": GenerationColumns([""] * n, [""] * n, np.zeros(n, bool), np.ones(n, np.int64))})
    block = bias_metrics(gen, n_boot=0)["position_bias"]
    assert block["unparsed_rows"] == 10 and block["n_rows"] == 30 and block["letter"] == "A"
    none = Predictions(**{**gen.__dict__, "pred": np.full(n, -1)})
    assert bias_metrics(none, n_boot=0)["position_bias"]["value"] is None


def test_mixed_option_counts_expect_each_letter_by_its_questions():
    rows = question("two", [[0, 1], [1, 0]], gold=0, picks=[0, 0]) + question("four", cyclic(K), 0, [0] * K)
    block = bias_metrics(build(rows), n_boot=0)["position_bias"]
    assert block["letters"]["A"]["expected"] == pytest.approx((1 + 1) / 6)  # 2 rows x 1/2 + 4 rows x 1/4
    assert block["letters"]["C"]["expected"] == pytest.approx(1 / 6)


def test_one_order_per_question_says_what_the_test_can_see():
    rows = [r for i in range(20) for r in question(f"q{i}", [[(i + j) % 4 for j in range(4)]], 0, [i % 4])]
    block = bias_metrics(build(rows), n_boot=0, mode="random")["position_bias"]
    assert block["value"] is not None and "one order per question" in block["note"]


def test_p_text():
    assert p_text(0.0004, 999, 0) == "p < 0.001"
    assert p_text(0.0123, 999, 12) == "p = 0.012"
    assert p_text(0.41, 999, 400) == "p = 0.41"
