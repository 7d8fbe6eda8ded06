"""Prompts are byte-identical to lm-evaluation-harness's `mmlu` task (default template)."""

from __future__ import annotations

import datasets
import jinja2
import pytest

from twinkle_hf.data.features import CANONICAL_FEATURES
from twinkle_hf.errors import TwinkleError
from twinkle_hf.prompts.permute import expand_permutations
from twinkle_hf.prompts.templates import (
    EN_TEMPLATE,
    ZH_TEMPLATE,
    build_prompt_set,
    format_question,
    resolve_template,
)

# lm_eval/tasks/mmlu/default/_default_template_yaml (lm-evaluation-harness, MIT):
# doc_to_text, the per-subject description, target_delimiter " " and fewshot_delimiter "\n\n".
LM_EVAL_DOC_TO_TEXT = ("{{question.strip()}}\nA. {{choices[0]}}\nB. {{choices[1]}}\nC. {{choices[2]}}\n"
                       "D. {{choices[3]}}\nAnswer:")
LM_EVAL_DESCRIPTION = "The following are multiple choice questions (with answers) about {subject}.\n\n"


def build_prompts(rows, template, **kwargs) -> list[str]:
    """The prompt texts only."""
    return build_prompt_set(rows, template, **kwargs).texts


def lm_eval_prompt(doc: dict, shots: list[dict], subject: str) -> str:
    render = jinja2.Template(LM_EVAL_DOC_TO_TEXT, keep_trailing_newline=True).render
    text = LM_EVAL_DESCRIPTION.format(subject=subject.replace("_", " "))
    for shot in shots:
        text += render(**shot) + " " + "ABCD"[shot["answer"]] + "\n\n"
    return text + render(**doc)


def rows(n: int, subject: str, prefix: str) -> datasets.Dataset:
    return datasets.Dataset.from_dict(
        {"id": [f"{prefix}{i}" for i in range(n)], "subject": [subject] * n,
         "question": [f"  What is item {i}?\n" for i in range(n)],
         "choices": [[f"alpha {i}", "beta", " gamma ", "None"] for i in range(n)], "answer": [i % 4 for i in range(n)]},
        features=CANONICAL_FEATURES,
    )


@pytest.mark.parametrize("k", [0, 1, 5])
def test_unshuffled_prompts_match_lm_eval_byte_for_byte(k):
    test, dev = rows(3, "high_school_biology", "t"), rows(5, "high_school_biology", "d")
    prompts = build_prompts(expand_permutations(test, "none", 0), EN_TEMPLATE, num_fewshot=k, pool=dev)
    for doc, prompt in zip(test, prompts):
        assert prompt == lm_eval_prompt(doc, list(dev)[:k], "high_school_biology")


def test_question_block_handles_k_options_and_no_subject():
    block = format_question(EN_TEMPLATE, " Q? ", ["x", "y"])
    assert block == "Q?\nA. x\nB. y\nAnswer:"
    data = rows(1, "", "t")
    (prompt,) = build_prompts(expand_permutations(data, "none", 0), EN_TEMPLATE)
    assert prompt.startswith("The following are multiple choice questions (with answers).\n\nWhat is item 0?")


def test_shuffled_fewshot_block_is_shared_per_subject_and_index_and_permuted():
    test, dev = rows(4, "s", "t"), rows(5, "s", "d")
    expanded = expand_permutations(test, "random", seed=5, n_random=3)
    prompts = build_prompts(expanded, EN_TEMPLATE, num_fewshot=5, pool=dev, shuffled=True, seed=5)
    blocks: dict[int, set[str]] = {}
    for p, idx in zip(prompts, expanded["order_index"]):
        blocks.setdefault(idx, set()).add(p.rsplit("\n\n", 1)[0])
    assert all(len(b) == 1 for b in blocks.values())  # same few-shot block for every question
    assert len({next(iter(b)) for b in blocks.values()}) == len(blocks)  # differs across indices
    original = next(iter(blocks[-1]))
    assert original == lm_eval_prompt(test[0], list(dev), "s").rsplit("\n\n", 1)[0]


def test_fewshot_from_the_evaluated_data_excludes_the_question_itself():
    data = rows(4, "s", "t")
    prompts = build_prompts(expand_permutations(data, "none", 0), EN_TEMPLATE, num_fewshot=2, self_pool=data)
    for i, p in enumerate(prompts):
        assert p.count(f"What is item {i}?") == 1


def test_too_few_fewshot_examples_is_a_clear_error():
    with pytest.raises(TwinkleError, match="only 2 usable"):
        build_prompts(expand_permutations(rows(1, "s", "t"), "none", 0), EN_TEMPLATE, num_fewshot=3,
                      pool=rows(2, "s", "d"))


def test_zh_template_and_overrides():
    (prompt,) = build_prompts(expand_permutations(rows(1, "會計", "t"), "none", 0), ZH_TEMPLATE)
    assert prompt.startswith("以下為會計的單選題") and prompt.endswith("\n答案：")
    custom = resolve_template("en", {"answer_cue": "Réponse:"})
    assert format_question(custom, "Q", ["a", "b"]).endswith("Réponse:")
