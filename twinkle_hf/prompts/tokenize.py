"""Prompt strings to token ids, the tokenizer's own ids, with as little tokenizing as that allows.

A fast tokenizer's Rust core is called directly where it gives the tokenizer's own ids (it skips a
Python dict per text). Rows that share a long start (one few-shot block, or one question's orders)
have that start tokenized once per group. The group's first row is tokenized in full, and every
other row from a cut well inside the shared text: its ids are the first row's up to the cut, then
its own rest's. That is exact where tokenizing splits text into pieces by rules that look only a
character or so ahead (the regex pre-tokenizers of byte-level BPE tokenizers). So each group is
checked before its rows are cut: the first row and the last one, each rebuilt from the cut, must
equal their ids tokenized in full, else the group is tokenized in full.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

# The cut lies at least this many characters before the end of a group's shared text, at a token
# boundary: what decides the pieces before it, and the ones from it on, is then the same text in
# every row of the group.
MARGIN = 32
MIN_SAVING = 256  # characters: a shorter shared start is tokenized with each row


def rust_core(tokenizer: Any, texts: Sequence[str], special: bool) -> Any:
    """The fast tokenizer's Rust core, where it neither truncates nor pads and its ids for the first
    text equal the tokenizer's own; else None."""
    backend: Any = getattr(tokenizer, "backend_tokenizer", None)
    plain = backend is not None and getattr(backend, "truncation", 1) is None and getattr(backend, "padding", 1) is None
    if plain and texts and tokenizer(list(texts[:1]), add_special_tokens=special)["input_ids"][0] == \
            backend.encode(texts[0], add_special_tokens=special).ids:
        return backend
    return None


def encode_texts(tokenizer: Any, texts: list[str], special: bool) -> list[list[int]]:
    """``tokenizer(texts)["input_ids"]``, from the Rust core where that gives the same ids (a third
    of the time)."""
    core = rust_core(tokenizer, texts, special)
    if core is None:
        return tokenizer(texts, add_special_tokens=special)["input_ids"]
    return _ids(core, texts, special)


def _ids(core: Any, texts: Sequence[str], special: bool) -> list[list[int]]:
    fast = getattr(core, "encode_batch_fast", None)  # tokenizers >= 0.21: no offsets computed
    return [e.ids for e in (fast or core.encode_batch)(list(texts), add_special_tokens=special)]


def encode_grouped(tokenizer: Any, texts: list[str], groups: Sequence[Hashable] | None,
                   special: bool) -> list[list[int]]:
    """:func:`encode_texts`, with the shared start of each group's rows (``groups``: a key per row)
    tokenized once where the check in the module docstring passes."""
    core = rust_core(tokenizer, texts, special) if groups is not None else None
    if core is None or groups is None:
        return encode_texts(tokenizer, texts, special)
    members: dict[Hashable, list[int]] = {}
    for i, key in enumerate(groups):
        members.setdefault(key, []).append(i)
    out: list[list[int] | None] = [None] * len(texts)
    members_of = {rows[0]: rows for rows in members.values()}
    shared = {first: shared_start([texts[i] for i in rows]) for first, rows in members_of.items() if len(rows) > 2}
    ends = [(first, members_of[first][-1]) for first, chars in shared.items() if chars >= MIN_SAVING + MARGIN]
    full = core.encode_batch([texts[i] for pair in ends for i in pair], add_special_tokens=special)
    cuts: dict[int, tuple[int, int]] = {}  # first row -> (characters, tokens) before the cut
    for n, (first, last) in enumerate(ends):
        head, tail = full[2 * n], full[2 * n + 1]
        out[first], out[last] = head.ids, tail.ids
        cut = _cut(head, shared[first])
        if cut is not None:
            cuts[first] = cut
    # Check: the first and last rows rebuilt from the cut equal their own ids.
    checks = [(i, first, cuts[first]) for first, last in ends if first in cuts for i in (first, last)]
    rests = _ids(core, [texts[i][chars:] for i, _, (chars, _) in checks], False)
    known: list[list[int]] = out  # type: ignore[assignment]  # the ends of every group are filled
    bad = {first for (i, first, (_, tokens)), rest in zip(checks, rests) if known[first][:tokens] + rest != known[i]}
    good = set(cuts) - bad
    jobs = [(i, first) for first in good for i in members_of[first][1:-1]]
    rests = _ids(core, [texts[i][cuts[first][0]:] for i, first in jobs], False)
    for (i, first), rest in zip(jobs, rests):
        out[i] = known[first][:cuts[first][1]] + rest
    missing = [i for i, ids in enumerate(out) if ids is None]
    for i, ids in zip(missing, _ids(core, [texts[i] for i in missing], special)):
        out[i] = ids
    return out  # type: ignore[return-value]


def _cut(encoding: Any, shared: int) -> tuple[int, int] | None:
    """Where to cut a group whose rows share their first ``shared`` characters: (characters, tokens)
    before the last clean token boundary at least MARGIN characters inside the shared text; None
    where that saves too little."""
    offsets, limit = encoding.offsets, shared - MARGIN
    for k in range(len(offsets) - 1, 0, -1):
        start, end_before = offsets[k][0], offsets[k - 1][1]
        if start <= limit and start == end_before and offsets[k][1] > start:
            return (start, k) if start >= MIN_SAVING else None
    return None


def shared_start(texts: Sequence[str]) -> int:
    """How many characters all ``texts`` share at their start (those of the smallest and the largest
    in sort order, which every other one shares too)."""
    low, high = min(texts), max(texts)
    lo, hi = 0, min(len(low), len(high))
    while lo < hi:  # the longest m with low[:m] == high[:m]
        m = (lo + hi + 1) // 2
        if low[:m] == high[:m]:
            lo = m
        else:
            hi = m - 1
    return lo
