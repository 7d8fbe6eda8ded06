"""Answer extraction from generated text: a table of what real models write, per method."""

from __future__ import annotations

import pytest

from twinkle_hf.errors import TwinkleError
from twinkle_hf.metrics.extract import extract, split_reasoning
from twinkle_hf.settings.values import compile_answer_regex

# (generated text, expected letter or None for "no answer"); k = 4 unless the row says otherwise
PATTERN = [
    ("Answer: C", "C"),  # Twinkle Eval's regex reads this as A
    ("The answer is B", "B"),  # ... and this as T
    ("The answer is (C).", "C"),
    ("the correct answer is **D**", "D"),
    ("Final answer: (A)", "A"),
    ("**Answer:** B", "B"),
    ("**Answer: C**", "C"),
    ("Answer: Option D", "D"),
    ("The answer is: C", "C"),
    ("answer = B", "B"),
    ("So the answer should be A.", "A"),
    ("I think the answer is B. Wait, let me re-check. Actually, the answer is D.", "D"),  # the last statement
    ("Answer: B\n\nExplanation: A is wrong because ...", "B"),
    ("C", "C"),
    ("(C)", "C"),
    ("C.", "C"),
    ("  B  \n", "B"),
    ("C. Paris", "C"),
    ("B) 42", "B"),
    ("**C**", "C"),
    ("**C. Paris** is the capital.", "C"),
    ("The capital of France is Paris, so **(B)**.", "B"),
    ("Option C is correct.", "C"),
    ("(B) is the correct answer.", "B"),
    ("B is correct because the others are false.", "B"),
    ("The correct option is D", "D"),
    ("The best choice is (A).", "A"),
    ("I would choose C.", "C"),
    ("I'd go with B", "B"),
    ("Looking at the options, I will pick D.", "D"),
    ("Option C.", "C"),
    ("Ｃ", "C"),  # full-width
    ("Answer：Ｂ", "B"),
    ("The final answer is $\\boxed{C}$", "C"),  # a box is a statement too
    ("Answer: E", None),  # beyond k = 4
    ("Answer: A or B, I am not sure", "A"),
    ("The answer is therefore unclear.", None),  # not "T"
    ("Answer", None),  # not "A"
    ("I cannot determine the answer.", None),
    ("A. foo\nB. bar\nC. baz\nD. qux", None),  # the options echoed: no single letter
    ("", None),
    ("Let me think step by step. The question asks about physics.", None),
    ("The answer is a", None),  # lower case "a" is an article, not an option
    # Chinese, Traditional and Simplified
    ("答案：C", "C"),
    ("答案：（C）", "C"),
    ("答案是 C", "C"),
    ("答案為B", "B"),
    ("答案是：D", "D"),
    ("正確答案是A。", "A"),
    ("正确答案是 B", "B"),
    ("答案應該是C", "C"),
    ("答案应该是 D", "D"),
    ("選項C", "C"),
    ("选项 B 正确", "B"),
    ("選項A錯誤，選項C正確。", "C"),
    ("故選 D", "D"),
    ("所以选B。", "B"),
    ("我選C", "C"),
    ("答案：Ｄ", "D"),
    ("根據題意，答案是B。但再想想，答案應該是C。", "C"),
    ("這題無法判斷。", None),
    ("答案：E", None),
]

BOX = [
    ("The answer is \\boxed{C}.", "C"),
    ("\\box{B}", "B"),
    ("\\boxed{\\text{D}}", "D"),
    ("\\boxed{(A)}", "A"),
    ("\\boxed{\\textbf{C}}", "C"),
    ("$\\boxed{B. 42}$", "B"),
    ("First \\boxed{A}, but on reflection \\boxed{D}", "D"),
    ("\\boxed{E}", None),  # beyond k
    ("\\boxed{42}", None),
    ("Answer: C", None),  # box mode reads boxes only
    ("\\boxed{C", None),  # never closed
    ("\\boxed{C} and then \\boxed{\\text{unsure}}", "C"),  # the last box that holds a letter
]

THINKING = [  # (text, method, expected letter, expected reasoning)
    ("<think>The answer is A? No.</think>\n\nAnswer: C", "pattern", "C", "The answer is A? No."),
    ("<think>\\boxed{A}</think>The final answer is \\boxed{B}", "box", "B", "\\boxed{A}"),
    ("Maybe A.</think>\n\nAnswer: D", "pattern", "D", "Maybe A."),  # template opened <think> in the prompt
    ("<reasoning>answer: B</reasoning>Answer: C", "pattern", "C", "answer: B"),
    ("<reason>B</reason> C", "pattern", "C", "B"),
    ("<think>Answer: A ... still thinking", "pattern", None, "Answer: A ... still thinking"),  # cut off
    ("<think>a</think>x<think>Answer: B</think>Answer: A", "pattern", "A", "a x Answer: B"),
]


def _letter(pred: int) -> str | None:
    return None if pred < 0 else "ABCDEFGHIJ"[pred]


@pytest.mark.parametrize(("text", "expected"), PATTERN)
def test_pattern_extraction(text, expected):
    assert _letter(extract(text, 4, "pattern").pred) == expected


@pytest.mark.parametrize(("text", "expected"), BOX)
def test_box_extraction(text, expected):
    assert _letter(extract(text, 4, "box").pred) == expected


@pytest.mark.parametrize(("text", "method", "expected", "reasoning"), THINKING)
def test_think_blocks_are_never_read(text, method, expected, reasoning):
    out = extract(text, 4, method)
    assert _letter(out.pred) == expected and out.parsed == (expected is not None)
    assert " ".join(out.reasoning.split()) == reasoning


def test_the_table_is_large_enough():
    assert len(PATTERN) + len(BOX) + len(THINKING) >= 60


def test_letters_beyond_the_option_count_are_ignored():
    assert _letter(extract("Answer: D", 3, "pattern").pred) is None
    assert _letter(extract("Answer: C. Hmm, maybe the answer is D", 3, "pattern").pred) == "C"
    assert _letter(extract("Answer: J", 10, "pattern").pred) == "J"


def test_regex_method_takes_the_last_match_with_a_valid_letter():
    pattern = compile_answer_regex(r"Choice:\s*([A-Z])")
    assert _letter(extract("Choice: B ... Choice: C", 4, "regex", pattern).pred) == "C"
    assert _letter(extract("Choice: B ... Choice: Z", 4, "regex", pattern).pred) == "B"
    assert _letter(extract("<think>Choice: A</think>no choice", 4, "regex", pattern).pred) is None


def test_several_patterns_are_tried_in_turn():
    patterns = compile_answer_regex([r"Final:\s*([A-Z])", r"Choice:\s*([A-Z])"])
    assert _letter(extract("Choice: B ... Final: C ... Choice: D", 4, "regex", patterns).pred) == "C"  # first wins
    assert _letter(extract("Choice: B ... Choice: D", 4, "regex", patterns).pred) == "D"  # else the next
    assert _letter(extract("Final: Z ... Choice: A", 4, "regex", patterns).pred) == "A"  # no valid letter: next
    with pytest.raises(TwinkleError, match="has 0 capturing groups"):
        compile_answer_regex([r"Final:\s*([A-Z])", r"[A-Z]"])


@pytest.mark.parametrize(("pattern", "message"), [("([A-Z]", "is not a regular expression"),
                                                  ("[A-Z]", "has 0 capturing groups"),
                                                  ("(x)([A-Z])", "has 2 capturing groups")])
def test_a_bad_answer_regex_says_what_to_fix(pattern, message):
    with pytest.raises(TwinkleError, match=message):
        compile_answer_regex(pattern)


def test_split_reasoning_without_tags_reads_everything():
    assert split_reasoning("Answer: B") == ("", "Answer: B")
