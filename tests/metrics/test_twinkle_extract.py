"""``--extractor twinkle`` reads the letters Twinkle Eval 2.10 reads, misreadings included; twinkle_hf's
own extraction (the default) reads the same texts differently where Twinkle's patterns go wrong.

Each expected letter is worked out by hand from Twinkle Eval's rules: its pattern list tried in order,
group 1 of the first match of the first pattern that matches, stripped and upper-cased; only what
follows a complete think block is read; a blank reply reads nothing.
"""

from __future__ import annotations

import pytest

from twinkle_hf.metrics.extract import extract
from twinkle_hf.metrics.twinkle_extract import (
    PATTERNS,
    letter_index,
    strip_think_blocks,
    twinkle_letter,
    twinkle_patterns,
)
from twinkle_hf.settings.values import compile_answer_regex

# (generated text, method, custom_regex patterns, Twinkle Eval's letter, twinkle_hf's letter), k = 4
TABLE = [
    # Twinkle's last resort "([A-Z])." takes the first capital followed by any character
    ("The answer is B", "pattern", None, "T", "B"),
    ("Answer: C", "pattern", None, "A", "C"),
    ("Option A is wrong. The correct answer is (C).", "pattern", None, "O", "C"),
    # its explicit patterns
    ("答案：B", "pattern", None, "B", "B"),
    ("答案是 C。", "pattern", None, "C", "C"),  # no colon: the last resort, whose first capital is C
    ("I think the correct answer is:\nD. Paris", "pattern", None, "D", "D"),
    ("**B**", "pattern", None, "B", "B"),
    ("\\boxed{C}", "pattern", None, "C", "C"),
    # think blocks: only after a complete pair is read; an unclosed one is read whole by Twinkle, never by us
    ("<think>Maybe A. No.</think>\nAnswer: D", "pattern", None, "A", "D"),
    ("<think>unclosed, maybe A. or B.", "pattern", None, "A", None),
    # a letter no option has: Twinkle reads it (and scores it wrong), twinkle_hf reads nothing
    ("E. none of these", "pattern", None, "E", None),
    ("b", "pattern", None, None, None),
    ("", "pattern", None, None, None),
    ("   ", "pattern", None, None, None),
    # box: \box{X} or \boxed{X} with the letter alone; the first box counts there, the last one here
    ("\\boxed{B}", "box", None, "B", "B"),
    ("\\box{C}", "box", None, "C", "C"),
    ("\\\\boxed{D}", "box", None, "D", "D"),
    ("\\boxed{\\text{B}}", "box", None, None, "B"),
    ("\\boxed{ B }", "box", None, None, "B"),
    ("\\boxed{A} then \\boxed{C}", "box", None, "A", "C"),
    # custom_regex: the first match of the first pattern that matches, upper-cased
    ("Answer: b", "regex", ["Answer: ([a-dA-D])"], "B", None),
    ("Answer: A ... no, Answer: C", "regex", ["Answer: ([A-D])"], "A", "C"),
    ("Choice=B", "regex", ["Answer: ([A-D])", "=([A-D])"], "B", "B"),
]


@pytest.mark.parametrize(("text", "method", "regex", "twinkle", "ours"), TABLE)
def test_both_readings(text, method, regex, twinkle, ours):
    assert twinkle_letter(text, twinkle_patterns(method, regex)) == twinkle
    index = extract(text, 4, method, compile_answer_regex(regex) if regex else None).pred
    assert (None if index < 0 else "ABCD"[index]) == ours


def test_letters_become_option_indices_and_think_blocks_are_cut_as_twinkle_cuts_them():
    assert [letter_index(x, 4) for x in ("A", "D", "E", "T", "AB", "", None)] == [0, 3, -1, -1, -1, -1, -1]
    assert strip_think_blocks("<THINK>x</think>  B. ok ") == "B. ok"  # any case, stripped
    assert strip_think_blocks("<reason>a</reason>b</reason> C") == "C"  # after the last closing tag
    assert strip_think_blocks("no tags </think> A") == "no tags </think> A"  # a pair or nothing
    assert len(PATTERNS) == 38 and PATTERNS[-2:] == ("([A-Z]). ", "([A-Z]).")
    with pytest.raises(ValueError, match="needs answer_regex"):
        twinkle_patterns("regex")
    with pytest.raises(ValueError, match="not 'logit'"):
        twinkle_patterns("logit")
