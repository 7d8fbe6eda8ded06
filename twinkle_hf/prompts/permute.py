"""Option permutations: a pure function of (base seed, row id, order index).

Each permutation comes from a counter-based hash (splitmix64 over the seed, a hash of the row id,
the order index and the option position), so it never depends on batch size, shard,
process count, row order or ``--limit``, and never touches a global random state. The gold answer
is remapped by *index*, so two options with the same text cannot confuse it.

``perm[j]`` is the original index of the option displayed at position ``j``.

A shuffle never changes the question (anchors.py): an option that names its place ("all of the
above") keeps its letter and the others move within their run of free slots; a letter reference
("Both A and C") moves and names where its options now stand. Questions without such options get
exactly the orders they would get without this rule.
"""

from __future__ import annotations

import hashlib
import itertools
import math

import datasets
import numpy as np

from ..data.features import PERMUTED_FEATURES
from ..errors import TwinkleError
from ..schema import ORIGINAL
from .anchors import PLAIN, OptionRoles, classify_options, rewrite_reference

_CYCLIC_STREAM = np.uint64(0x9E3779B97F4A7C15)  # base permutation of cyclic mode: its own stream
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MAX_ALL_OPTIONS = 6  # `all` mode: 6! = 720 orders per question is already a lot


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """The splitmix64 finaliser, elementwise on uint64 (wraps modulo 2**64 by design)."""
    with np.errstate(over="ignore"):
        z = x + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


def hash_ids(ids: list[str]) -> np.ndarray:
    """Stable 64-bit hash of each row id (blake2b; independent of Python's hash seed)."""
    return np.array(
        [int.from_bytes(hashlib.blake2b(i.encode("utf-8"), digest_size=8).digest(), "little") for i in ids],
        dtype=np.uint64,
    )


def random_permutations(seed: int, id_hashes: np.ndarray, order_indices: np.ndarray, k: int) -> np.ndarray:
    """One uniformly random permutation of ``range(k)`` per (id hash, order index) pair."""
    base = _splitmix64(np.uint64(seed) ^ _splitmix64(id_hashes ^ _splitmix64(order_indices.astype(np.uint64))))
    with np.errstate(over="ignore"):
        keys = _splitmix64(base[:, None] + np.arange(k, dtype=np.uint64)[None, :] * _GOLDEN)
    return np.argsort(keys, axis=1, kind="stable").astype(np.int64)


def cyclic_permutations(seed: int, id_hashes: np.ndarray, k: int) -> np.ndarray:
    """The k rotations of one random base permutation per id: shape [n, k(rotation), k]."""
    stream = np.full(len(id_hashes), _CYCLIC_STREAM, dtype=np.uint64)
    base = random_permutations(seed, id_hashes, stream, k)
    rot = (np.arange(k)[:, None] + np.arange(k)[None, :]) % k  # rot[r, j] = (j + r) % k
    return base[:, rot]


def all_permutations(k: int) -> np.ndarray:
    """Every order of ``range(k)``, lexicographic: shape [k!, k]."""
    if k > MAX_ALL_OPTIONS:
        raise TwinkleError(
            f"shuffle_mode 'all' would score {math.factorial(k)} orders of a {k}-option question; "
            f"it supports at most {MAX_ALL_OPTIONS} options. Use --shuffle-mode cyclic or random."
        )
    return np.array(list(itertools.permutations(range(k))), dtype=np.int64)


def permutations_for(mode: str, seed: int, n_random: int, ids: list[str], k: int) -> tuple[np.ndarray, np.ndarray]:
    """Permutations of k-option questions ``ids``: (order_index [n, m], perm [n, m, k])."""
    if mode == "none":
        n = len(ids)
        return np.zeros((n, 1), np.int64), np.broadcast_to(np.arange(k), (n, 1, k)).copy()
    return _permutations_of_hashes(mode, seed, n_random, hash_ids(ids), k)


def _permutations_of_hashes(mode: str, seed: int, n_random: int, hashes: np.ndarray,
                            k: int) -> tuple[np.ndarray, np.ndarray]:
    n = len(hashes)
    if mode == "random":
        idx = np.broadcast_to(np.arange(n_random, dtype=np.int64), (n, n_random))
        perms = random_permutations(seed, np.repeat(hashes, n_random), idx.reshape(-1), k)
        return idx.copy(), perms.reshape(n, n_random, k)
    if mode == "cyclic":
        return np.broadcast_to(np.arange(k, dtype=np.int64), (n, k)).copy(), cyclic_permutations(seed, hashes, k)
    if mode == "all":
        table = all_permutations(k)
        m = len(table)
        return np.broadcast_to(np.arange(m, dtype=np.int64), (n, m)).copy(), np.broadcast_to(table, (n, m, k)).copy()
    raise TwinkleError(f"unknown shuffle mode {mode!r}")


def apply_permutation(choices: list[str], answer: int, perm: np.ndarray | list[int],
                      roles: OptionRoles = PLAIN) -> tuple[list[str], int, list[int]]:
    """The options in displayed order (``perm[j]`` is shown at j), and the gold answer's displayed position.

    The gold position is found by *index*, so two options with the same text cannot confuse it. The
    letter references (``roles``, original indices) are rewritten to where the options they name
    now stand."""
    shown = [choices[p] for p in perm]
    position_of = np.argsort(np.asarray(perm)).tolist()
    changed = []
    for i, named in roles.refs.items():
        text = rewrite_reference(choices[i], named, position_of)
        if text != choices[i]:
            shown[position_of[i]] = text
            changed.append(i)
    return shown, position_of[answer], sorted(changed)


def free_segments(k: int, pinned: tuple[int, ...]) -> list[np.ndarray]:
    """The runs of slots between pinned options: "both of the above" at C keeps A and B above it and D
    below it, so options move only within their run."""
    cuts = [-1, *sorted(pinned), k]
    return [np.arange(a + 1, b, dtype=np.int64) for a, b in itertools.pairwise(cuts) if b - a > 1]


def anchored_orders(mode: str, seed: int, n_random: int, id_hash: np.uint64, k: int,
                    roles: OptionRoles) -> tuple[np.ndarray, np.ndarray]:
    """The orders of one question with pinned options (anchors.py).

    Each pinned option keeps its place, and the others are permuted within their run of free slots
    (:func:`free_segments`) by ``mode``. Cyclic: each option at each slot of its run once (a Latin
    square over one run), so the question gets as many orders as its longest run. Random:
    ``n_random`` orders. All: every combination. A fixed question, or one with no run of two, keeps
    its original order (one order)."""
    segments = [seg for seg in free_segments(k, roles.pinned) if len(seg) > 1]
    if mode == "none" or roles.fixed or not segments:
        return np.zeros(1, np.int64), np.arange(k, dtype=np.int64)[None, :]
    if mode == "all":
        tables = [all_permutations(len(seg)) for seg in segments]
        combos = list(itertools.product(*[range(len(t)) for t in tables]))
        perms = np.broadcast_to(np.arange(k, dtype=np.int64), (len(combos), k)).copy()
        for row, combo in enumerate(combos):
            for seg, table, c in zip(segments, tables, combo):
                perms[row, seg] = seg[table[c]]
        return np.arange(len(combos), dtype=np.int64), perms
    m = n_random if mode == "random" else max(len(seg) for seg in segments)
    perms = np.broadcast_to(np.arange(k, dtype=np.int64), (m, k)).copy()
    for s, seg in enumerate(segments):  # the first run draws from the question's own stream
        salted = np.array([id_hash ^ np.uint64(s)], dtype=np.uint64) if s else np.array([id_hash], dtype=np.uint64)
        _, sub = _permutations_of_hashes(mode, seed, n_random, salted, len(seg))
        perms[:, seg] = seg[sub[0][np.arange(m) % len(sub[0])]]
    return np.arange(m, dtype=np.int64), perms


def is_fixed(roles: OptionRoles, k: int) -> bool:
    """Whether the question keeps its original order in every order (see :func:`anchored_orders`)."""
    return roles.fixed or not any(len(seg) > 1 for seg in free_segments(k, roles.pinned))


def _expand_batch(batch: dict[str, list], mode: str, seed: int, n_random: int, score_original: bool,
                  keep_meaning: bool) -> dict[str, list]:
    out: dict[str, list] = {key: [] for key in PERMUTED_FEATURES}
    ks = np.array([len(c) for c in batch["choices"]])
    roles = [classify_options(q, c) if keep_meaning else PLAIN for q, c in zip(batch["question"], batch["choices"])]
    per_row: list[list[tuple[int, np.ndarray]]] = [[] for _ in ks]
    moved = np.array([bool(r.pinned) or r.fixed for r in roles], dtype=bool)  # orders of their own
    for size in np.unique(ks):
        rows = np.flatnonzero((ks == size) & ~moved)
        idx, perms = permutations_for(mode, seed, n_random, [batch["id"][r] for r in rows], int(size))
        for j, row in enumerate(rows.tolist()):
            per_row[row] = list(zip(idx[j].tolist(), perms[j]))
    for row in np.flatnonzero(moved).tolist():
        idx1, perms1 = anchored_orders(mode, seed, n_random, hash_ids([batch["id"][row]])[0], int(ks[row]),
                                       roles[row])
        per_row[row] = list(zip(idx1.tolist(), perms1))
    for r, items in enumerate(per_row):
        k = int(ks[r])
        if score_original and mode != "none":
            items = [(ORIGINAL, np.arange(k))] + items
        choices, gold = batch["choices"][r], batch["answer"][r]
        for order_index, perm in items:
            out["id"].append(batch["id"][r])
            out["subject"].append(batch["subject"][r])
            out["question"].append(batch["question"][r])
            shown, answer, rewritten = apply_permutation(choices, gold, perm, roles[r])
            out["choices"].append(shown)
            out["answer"].append(answer)
            out["answer_original"].append(gold)
            out["order_index"].append(order_index)
            out["perm"].append(perm.tolist())
            out["pinned"].append(list(roles[r].pinned))
            out["rewritten"].append(rewritten)
            out["fixed_order"].append(is_fixed(roles[r], k) and mode != "none")
    return out


def expand_permutations(rows: datasets.Dataset, mode: str, seed: int, n_random: int = 1,
                        score_original: bool = True, keep_meaning: bool = True) -> datasets.Dataset:
    """One row per (question, permutation), answers remapped by index (see module docstring).

    With a shuffling mode and ``score_original``, the unpermuted order is added as
    ``order_index == ORIGINAL`` so that ``acc_original`` is measured on the same run.
    ``n_random`` is the number of random orders (``--seeds``) in mode "random". With
    ``keep_meaning`` (``--keep-option-meaning``), options that name their place stay pinned and
    letter references are rewritten (anchors.py); the orders of every other question are unchanged.
    """
    return rows.map(
        _expand_batch,
        batched=True,
        batch_size=1000,
        remove_columns=rows.column_names,
        features=PERMUTED_FEATURES,
        fn_kwargs={"mode": mode, "seed": seed, "n_random": n_random, "score_original": score_original,
                   "keep_meaning": keep_meaning},
        load_from_cache_file=False,
        keep_in_memory=True,
        desc=None,
    )


def example_options(row: dict, seed: int, order_index: int, shuffled: bool,
                    keep_meaning: bool) -> tuple[list[str], int]:
    """A few-shot example's options and gold position under ``order_index``: permuted by (seed,
    order_index, example id) when shuffling, with its pinned options kept and its letter
    references rewritten like any question's."""
    k = len(row["choices"])
    roles = classify_options(row["question"], row["choices"]) if keep_meaning else PLAIN
    perm = np.arange(k)
    if shuffled and order_index != ORIGINAL:
        if roles.pinned or roles.fixed:
            perm = anchored_orders("random", seed, order_index + 1, hash_ids([row["id"]])[0], k, roles)[1][-1]
        else:
            perm = random_permutations(seed, hash_ids([row["id"]]), np.array([order_index]), k)[0]
    shown, answer, _ = apply_permutation(row["choices"], row["answer"], perm, roles)
    return shown, answer


_TIE_STREAM = 0xD1B54A32D192ED03  # tie-breaking orders: a stream of their own


def choose_options(probs: list[np.ndarray], ids: list[str], order_index: np.ndarray,
                   seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The predicted displayed position of each row, and whether its top probability was an exact tie.

    A plain argmax gives a tie to the first displayed option, i.e. to "A": a letter bias made by
    the evaluator, in the very number that measures letter bias. A tie is broken instead by a
    seeded random ranking of the positions, a function of (seed, row id, order index) like the
    orders themselves, so every tied letter is equally likely to win and reruns agree.
    """
    pred = np.array([int(np.argmax(p)) for p in probs], dtype=np.int64)
    tied = np.array([int(np.sum(p == p.max())) > 1 if len(p) else False for p in probs], dtype=bool)
    for r in np.flatnonzero(tied).tolist():
        p = probs[r]
        ranking = random_permutations(seed ^ _TIE_STREAM, hash_ids([ids[r]]), order_index[r:r + 1], len(p))[0]
        pred[r] = next(int(j) for j in ranking if p[j] == p.max())
    return pred, tied
