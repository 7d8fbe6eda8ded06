"""--method and its combined form: how "logit+cloze" splits, and the settings cloze refuses."""

from __future__ import annotations

import pytest

from twinkle_hf.errors import TwinkleError
from twinkle_hf.settings.config import EvalConfig, build_config
from twinkle_hf.settings.methods import answer_method, letter_method, scores_cloze, split_method, uses_regex


@pytest.mark.parametrize(("method", "parts", "letters", "cloze"), [
    ("logit", ("logit", None), "logit", False), ("pattern", ("pattern", None), "pattern", False),
    ("cloze", ("cloze", None), None, True), ("logit+cloze", ("logit", "cloze"), "logit", True),
    ("logit+pattern", ("logit", "pattern"), "logit", False)])
def test_split_method(method, parts, letters, cloze):
    assert split_method(method) == parts and letter_method(method) == letters and scores_cloze(method) == cloze
    cfg = EvalConfig(method=method, answer_regex=None)
    assert cfg.cloze == cloze and cfg.scores_letters == (letters is not None) and not (cfg.generates and cloze)


@pytest.mark.parametrize("method", ["cloze+logit", "box+cloze", "logit+", "CLOZE"])
def test_unknown_methods_are_refused(method):
    with pytest.raises(TwinkleError, match="method must be one of"):
        split_method(method)
    with pytest.raises(TwinkleError, match="method must be one of"):
        EvalConfig(method=method)


@pytest.mark.parametrize("setting", [{"apply_chat_template": True}, {"prompt_style": "twinkle"},
                                     {"twinkle_results": True}])
def test_cloze_refuses_what_has_no_plain_question(setting):
    with pytest.raises(TwinkleError, match="cloze scoring reads option texts"):
        build_config({"method": "cloze", **setting})


def test_dataset_overrides_cannot_mix_cloze_with_letters_alone():
    with pytest.raises(TwinkleError, match="cloze scoring and letters alone cannot share a run"):
        EvalConfig(dataset_overrides={"data": {"method": "cloze"}})
    EvalConfig(method="cloze", dataset_overrides={"data": {"num_fewshot": 1}})  # other settings may differ


@pytest.mark.parametrize(("method", "written", "regex"), [
    ("logit", None, False), ("regex", None, True), ("logit+cloze", None, False), ("logit+box", "box", False),
    ("logit+pattern", "pattern", False), ("logit+regex", "regex", True)])
def test_the_written_half_of_a_combined_method(method, written, regex):
    assert answer_method(method) == written and uses_regex(method) == regex
    cfg = EvalConfig(method=method, answer_regex="Answer: ([A-D])" if regex else None)
    assert cfg.generates == (method == "regex") and cfg.scores_letters  # logit+X: the headline letters are scored


def test_dataset_overrides_cannot_mix_written_letters_with_scored_ones_alone():
    with pytest.raises(TwinkleError, match="written letters and scored ones alone cannot share a run"):
        EvalConfig(method="logit+pattern", dataset_overrides={"data": {"method": "logit"}})
