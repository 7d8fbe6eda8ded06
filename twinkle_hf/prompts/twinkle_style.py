"""Twinkle Eval 2.10's prompts (``prompt_style: twinkle``, the default for a Twinkle Eval config).

Twinkle Eval builds one text per question (``build_question_text`` in its ``runners/evaluator.py``):
the question as given (not stripped), then one line ``"{K}: {text}"`` per option key K = A, B, ...
in order; no description, no examples, no instruction. Letter scoring (its ``logit`` method) sends
that text plus ``"\\nAnswer:"`` to the completions endpoint and scores the continuation ``" {K}"``;
the generation methods send it as the user message of a chat, after a system message only where
the config sets one (``settings/twinkle_config.py`` resolves it per dataset, as Twinkle does).

The texts are those Twinkle Eval shows for the file: where pandas types a CSV/TSV/Parquet column
("1.50" -> "1.5", "NA" -> "nan"), the loader keeps them in ``LoadedDataset.shown``
(:mod:`twinkle_hf.data.twinkle_cells`), and a notice names such files; everything else (the gold
answer, ids) uses the cells as written.

Permuted rows get Twinkle's keys in order: the option shown first is ``A``, whatever its original
place, as Twinkle's own ``shuffle_options`` writes them.
"""

from __future__ import annotations

from collections.abc import Sequence

import datasets

from ..data.load import LoadedDataset
from ..data.twinkle_cells import change_notice
from ..schema import index_to_letter

ANSWER_CUE = "\nAnswer:"  # what the logit method appends; the scored continuation is " " + the key
LABEL_PREFIX = " "


def twinkle_question(question: str, choices: Sequence[str]) -> str:
    """The question text Twinkle Eval sends: the question as given and a ``K: text`` line per option."""
    return question + "\n" + "\n".join(f"{index_to_letter(i)}: {text}" for i, text in enumerate(choices))


def twinkle_prompts(questions: Sequence[str], choices: Sequence[Sequence[str]], generates: bool) -> list[str]:
    """Every row's prompt text: the question text, followed by the answer cue for letter scoring."""
    cue = "" if generates else ANSWER_CUE
    return [twinkle_question(q, c) + cue for q, c in zip(questions, choices)]


def shown_texts(data: LoadedDataset, rows: datasets.Dataset) -> tuple[list[str], list[list[str]]]:
    """The permuted rows' questions and options (in displayed order) as Twinkle Eval shows them."""
    questions, choices = rows["question"][:], rows["choices"][:]
    if not data.shown:
        return questions, choices
    for r, (row_id, perm, rewritten) in enumerate(zip(rows["id"][:], rows["perm"][:], rows["rewritten"][:])):
        if row_id in data.shown:
            questions[r], original = data.shown[row_id]
            # a letter reference rewritten for this order ("Both B and D") stays as rewritten
            choices[r] = [choices[r][j] if o in rewritten else original[o] for j, o in enumerate(perm)]
    return questions, choices


def _twinkle_keys(options: Sequence[str]) -> bool:
    """Whether Twinkle Eval finds these option columns: ``A``, ``B``, ... exactly (case matters), or
    one ``choices`` list column (which it turns into them)."""
    return list(options) == [index_to_letter(i) for i in range(len(options))] or list(options) == ["choices"]


def left_out_notices(data: Sequence[LoadedDataset]) -> list[str]:
    """The notices Twinkle Eval gives once per file, as it words them.

    The fields that never reach the prompt (only the options are listed); where Twinkle Eval would
    not find the options under their column names; and where pandas types cells, so that Twinkle
    Eval shows them otherwise than written."""
    lines = []
    for d in data:
        for where, (options, unshown) in d.unshown.items():
            if unshown:
                lines.append(f"{where}: these fields never reach the prompt (only the options are listed): "
                             f"{', '.join(unshown)}. If one holds what the answer needs (a hint, a context), "
                             f"write it into the question field")
            if not _twinkle_keys(options):
                lines.append(f"{where}: the options are in {', '.join(options)}; Twinkle Eval finds options only "
                             f"under columns A, B, ... (or a 'choices' list), so its prompts for this file would "
                             f"differ; here they are listed as A:, B:, ... as it lists those")
        lines += [change_notice(where, changes) for where, changes in d.retyped.items()]
    return lines
