"""Token ids of the option labels, resolved *in context*.

The label that follows ``"Answer:"`` is ``" A"``. Byte-level BPE tokenizers (GPT-2, Llama-3, Qwen)
give ``" A"`` and ``"A"`` different ids, SentencePiece ones (Llama-2, Mistral) the same id, and a
tokenizer may merge the label with the text before it. So each label's id is found by tokenizing
the prompt and the prompt followed by the label and taking the difference, which must be exactly
one new token with the prompt's tokens unchanged; anything else is an error, never a guess.
"""

from __future__ import annotations

from typing import Any

from ..errors import TwinkleError
from ..schema import LETTERS


def _name(tokenizer: Any) -> str:
    return getattr(tokenizer, "name_or_path", "") or type(tokenizer).__name__


def resolve_letter_ids(tokenizer: Any, prompt: str, k: int, label_prefix: str = " ",
                       add_special_tokens: bool = True) -> list[int]:
    """Ids of ``label_prefix + "A"`` ... for k labels, as they follow ``prompt``."""
    base = tokenizer(prompt, add_special_tokens=add_special_tokens)["input_ids"]
    ids: list[int] = []
    for letter in LETTERS[:k]:
        label = label_prefix + letter
        full = tokenizer(prompt + label, add_special_tokens=add_special_tokens)["input_ids"]
        if len(full) != len(base) + 1 or full[: len(base)] != base:
            tail = tokenizer.convert_ids_to_tokens(full[max(0, len(base) - 2):])
            raise TwinkleError(
                f"tokenizer {_name(tokenizer)!r}: the label {label!r} after {prompt[-20:]!r} is not exactly "
                f"one new token (the prompt ends as {tail}); change the template's answer_cue or "
                f"label_prefix so each label is a single token"
            )
        ids.append(full[-1])
    if len(set(ids)) != k:
        raise TwinkleError(f"tokenizer {_name(tokenizer)!r} maps two option labels to the same token: {ids}")
    return ids
