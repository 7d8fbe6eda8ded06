"""Stage 3, prompts: option orders, prompt texts, letter token ids, prepared prompt sets.

Read first: :func:`~twinkle_hf.prompts.prepare.prepare_dataset` (prepare.py). Orders are made in
permute.py, texts in templates.py (lm-eval's mmlu format, few-shot blocks), each label's token id is
resolved in context by letters.py.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "resolve_letter_ids": "letters", "choose_options": "permute", "expand_permutations": "permute",
    "hash_ids": "permute", "Prepared": "prepare", "prepare_dataset": "prepare", "build_prompt_set": "templates",
    "format_question": "templates",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
