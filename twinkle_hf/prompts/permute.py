"""Option permutations: a pure function of (base seed, row id, order index).

Each permutation comes from a counter-based hash (splitmix64 over the seed, a hash of the row id,
the order index and the option position), so it never depends on batch size, shard,
process count, row order or ``--limit``, and never touches a global random state. The gold answer
is remapped by *index*, so two options with the same text cannot confuse it.

``perm[j]`` is the original index of the option displayed at position ``j``.
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
    n = len(ids)
    if mode == "none":
        return np.zeros((n, 1), np.int64), np.broadcast_to(np.arange(k), (n, 1, k)).copy()
    hashes = hash_ids(ids)
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


def apply_permutation(choices: list[str], answer: int, perm: np.ndarray) -> tuple[list[str], int]:
    """The options in displayed order (``perm[j]`` is shown at j) and the gold answer's displayed
    position, found by *index*, so two options with the same text cannot confuse it."""
    return [choices[p] for p in perm], int(np.flatnonzero(perm == answer)[0])


def _expand_batch(batch: dict[str, list], mode: str, seed: int, n_random: int, score_original: bool) -> dict[str, list]:
    out: dict[str, list] = {key: [] for key in PERMUTED_FEATURES}
    ks = np.array([len(c) for c in batch["choices"]])
    per_row: list[list[tuple[int, np.ndarray]]] = [[] for _ in ks]
    for size in np.unique(ks):
        rows = np.flatnonzero(ks == size)
        idx, perms = permutations_for(mode, seed, n_random, [batch["id"][r] for r in rows], int(size))
        for j, row in enumerate(rows.tolist()):
            per_row[row] = list(zip(idx[j].tolist(), perms[j]))
    for r, items in enumerate(per_row):
        k = int(ks[r])
        if score_original and mode != "none":
            items = [(ORIGINAL, np.arange(k))] + items
        choices, gold = batch["choices"][r], batch["answer"][r]
        for order_index, perm in items:
            out["id"].append(batch["id"][r])
            out["subject"].append(batch["subject"][r])
            out["question"].append(batch["question"][r])
            shown, answer = apply_permutation(choices, gold, perm)
            out["choices"].append(shown)
            out["answer"].append(answer)
            out["answer_original"].append(gold)
            out["order_index"].append(order_index)
            out["perm"].append(perm.tolist())
    return out


def expand_permutations(rows: datasets.Dataset, mode: str, seed: int, n_random: int = 1,
                        score_original: bool = True) -> datasets.Dataset:
    """One row per (question, permutation), answers remapped by index (see module docstring).

    With a shuffling mode and ``score_original``, the unpermuted order is added as
    ``order_index == ORIGINAL`` so that ``acc_original`` is measured on the same run.
    ``n_random`` is the number of random orders (``--seeds``) in mode "random".
    """
    return rows.map(
        _expand_batch,
        batched=True,
        batch_size=1000,
        remove_columns=rows.column_names,
        features=PERMUTED_FEATURES,
        fn_kwargs={"mode": mode, "seed": seed, "n_random": n_random, "score_original": score_original},
        load_from_cache_file=False,
        keep_in_memory=True,
        desc=None,
    )


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
