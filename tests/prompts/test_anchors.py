"""Options whose meaning depends on where they stand: the classifier on real strings (MMLU's test set,
CMMLU, Global-MMLU's Japanese split, KMMLU phrasings), look-alikes included, and the rewrite of a
letter reference."""

from __future__ import annotations

import pytest

from twinkle_hf.prompts.anchors import PLAIN, classify_options, letter_list, names_its_place, rewrite_reference

# Options that refer to the options around them by place, as they stand in the real data.
PLACE_NAMING = [
    "all of the above", "All of the above.", "None of the above", "none of the above.",
    "all of these options", "None of these", "All of these", "Neither of these", "Both of these",
    "All of the options given are correct", "All the above", "Either of these", "None of above",
    "Both of the above", "None of the options given is correct", "Any of the above", "All of them",
    "any of these", "All of above", "All of the above are true", "all of the above answers are correct",
    "none of the above; Cohen holds that animals can have rights", "nither of above", "above of the above",
    "any 2 of the above values", "both of the above.", "以上都不对", "以上全部", "以上都是", "以上都对",
    "以上所有", "以上均不是", "以上说法都不正确", "以上选项均是", "以上皆是", "以上皆非", "以上都有",
    "以上均不正确", "上述说法都正确", "以上三者都是", "以上答案都不对", "都不是", "全部正确", "上記のすべて",
    "上記のいずれでもない", "上記のどれでもない", "上記以外", "위의 모든 것", "위 모두", "모두 정답",
    "정답 없음",
]
# Options that only look like it: content that mentions "above" or a group, or that is not the
# whole option ("moons contribute to all of the above"), or 以上 meaning "more than".
NOT_PLACE_NAMING = [
    "rarely increases above 3 mm", "it will be located above the equilibrium price", "98% or above",
    "above average", "inspect the nail-bed angle from above", "all of the preconditions in the program are correct",
    "the cortical activity of these two groups", "Rocco had six baseballs and gave away two of them",
    "moons contribute to all of the above", "new mutations that occurred in the preceding generation",
    "None", "Both", "Neither", "60岁以上", "上述两种情况", "其他选项均可", "10以上", "以上三个平面相互垂直",
]
PLACE_NAMING += ["以上三点都对", "上述措施均无法减缓放射性元素衰变", "以上做法都正确", "全对", "都可以"]  # CMMLU test


@pytest.mark.parametrize("text", PLACE_NAMING)
def test_place_naming_options_are_found(text):
    assert names_its_place(text)


@pytest.mark.parametrize("text", NOT_PLACE_NAMING)
def test_look_alikes_of_place_naming_are_content(text):
    assert not names_its_place(text)


# (options, {option index: the options it names}) from real questions (MMLU test unless named).
REFERENCES = [
    (["Integrity", "Privacy", "Nonrepudiation", "Both A & C"], {3: (0, 2)}),  # computer_security 13
    (["Every compact space is complete", "Every complete space is compact", "Neither (a) nor (b).",
      " Both (a) and (b)."], {2: (0, 1), 3: (0, 1)}),  # college_mathematics 9
    (["ejecta", "raised rims", "central peaks", "A and B only"], {3: (0, 1)}),  # astronomy 18
    (["Impacts", "Erosion", "Volcanism", "A B and C"], {3: (0, 1, 2)}),  # astronomy 32
    (["L atm mol-1 K-1", "J mol-1 K-1", "volt coulomb mol-1 K-1", "(A), (B), and (C)"], {3: (0, 1, 2)}),
    (["production within a nation's borders.", "production by a nation's citizens wherever they may be.",
      "income earned by the factors of production.", "(A) and (C)"], {3: (0, 2)}),
    (["psychological", "sociological", "statistical", "b and c"], {3: (1, 2)}),  # human_sexuality 22
    (["Pay just compensation", "Terminate the regulation", "Pay double damages", "a or b"], {3: (0, 1)}),
    (["the animal.", "the wider effects on human beings.", "both A and B", "neither A nor B"], {2: (0, 1), 3: (0, 1)}),
    (["Inaccurate.", "Unreliable.", "both A and B.", "none of the above."], {2: (0, 1)}),
    (["the Central Intelligence Agency (CIA).", "the FBI.", "the National Security Council.",
      "Both A and B are correct."], {3: (0, 1)}),
    (["B ⊃ W", "W ⊃ B", "B ≡ W", "Both A and B"], {3: (0, 1)}),  # formal_logic 27: formulas, a real reference
    (["Options A and B", "x1", "y1", "z1"], {0: (0, 1)}),  # names its own letter: not a reference (below)
    (["墨水", "纸张", "以上都不对", "A和B均正确"], {3: (0, 1)}),  # CMMLU genetics style
    (["墨水", "纸张", "胶水", "AB"], {3: (0, 1)}),
    (["墨水", "纸张", "胶水", "A，B，C均可"], {3: (0, 1, 2)}),
    (["墨水", "纸张", "胶水", "$A，B，C$均对"], {3: (0, 1, 2)}),
    (["墨水", "纸张", "A，B均不是", "胶水"], {2: (0, 1)}),
    (["ink", "paper", "Nether A nor B", "glue"], {2: (0, 1)}),
]


@pytest.mark.parametrize(("choices", "refs"), REFERENCES)
def test_letter_references_name_other_options(choices, refs):
    roles = classify_options("A question?", choices)
    expected = {i: named for i, named in refs.items() if i not in named}  # an option's own letter: a data error
    assert roles.refs == expected


LOOK_ALIKES = [
    ["A and C", "B6 and B12", "B6 and D", "B12 and E"],  # human_aging 14: vitamins
    ["C, Ruby", "C, C++", "Java", "Python"],  # computer_security 50: languages
    ["A and B only.", "A and C only.", "B and C only.", "A B and C."],  # professional_accounting 32: all letter lists
    ["AB", "AC", "BD", "CD"], ["ab", "abcd", "abc", "bcd"],  # CMMLU: statements in the question text
    ["hurts creditors who do not anticipate it.", "hurts creditors who anticipate it.", "hurts debtors.",
     "both A and D are correct."],  # high_school_macroeconomics 57: names its own letter (a data error)
    ["continue in its present orbit.", "be sucked in.", "be pulled apart.", "Both C and D."],  # conceptual_physics 83
    ["B", "Al", "In", "Tl"], ["As", "P", "Sb", "B"], ["A", "E", "I", "O"], ["Error", "a", "b", "c"],  # lone letters
    ["A and B are equally good athletes.", "A is better", "B is better", "neither"],  # moral_disputes 277
    ["f(c)", "f(a)", "0", "1"], ["顺铂", "DA", "CHOP", "紫杉醇"],  # a function; DA a regimen (not in order)
    ["Country A and B", "x1", "y1", "z1"], ["firm B", "firm A", "both firms", "neither firm"],
    ["I and II only", "II and III only", "I and III only", "I, II and III"],  # Roman numerals name statements
    ["$A， B， A C$", "$A， B， A-C$", "$A， B， \\bar{A} \\bar{C}$", "$A， B， A+C$"],  # CMMLU: sets, not options
    ["a+b", "a*b", "a/b", "a-b"],  # CMMLU elementary_mathematics: arithmetic
]


@pytest.mark.parametrize("choices", LOOK_ALIKES)
def test_look_alikes_of_letter_references_are_content(choices):
    assert classify_options("A question?", choices).refs == {}


def test_a_question_text_that_names_options_keeps_its_order():
    assert classify_options("Which of options A and C are true?", ["p", "q", "r", "s"]).fixed
    assert classify_options("下列选项A和选项C哪个正确？", ["甲", "乙", "丙", "丁"]).fixed
    # variables, statements and law text are not options: "option a 250-acre", "P(A)", "events A and B"
    for text in ("A developer leased with an option a 250-acre property", "Given P(A) = 0.3 and P(B) = 0.2",
                 "If A and B are two events, which is true?", "Which of statements A and B", "option E is absent"):
        assert classify_options(text, ["p", "q", "r", "s"]) == PLAIN


def test_plain_questions_are_plain():
    assert classify_options("What is 2 + 2?", ["3", "4", "5", "22"]) == PLAIN


@pytest.mark.parametrize(("text", "named", "position_of", "expected"), [
    ("Both A and C", (0, 2), [3, 1, 0, 2], "Both A and D"),
    ("Both A & C", (0, 2), [1, 0, 3, 2], "Both B & D"),
    ("both (a) and (b).", (0, 1), [2, 0, 1, 3], "both (a) and (c)."),  # sorted, each slot keeps its case
    ("Neither (a) nor (b).", (0, 1), [3, 2, 0, 1], "Neither (c) nor (d)."),
    ("(A), (B), and (C)", (0, 1, 2), [1, 3, 0, 2], "(A), (B), and (D)"),
    ("A B and C", (0, 1, 2), [0, 1, 2, 3], "A B and C"),
    ("A和B均正确", (0, 1), [3, 2, 1, 0], "C和D均正确"),
    ("AB", (0, 1), [3, 2, 1, 0], "CD"),
    ("$A，B，C$均对", (0, 1, 2), [3, 0, 1, 2], "$A，B，D$均对"),
])
def test_a_reference_names_where_its_options_stand(text, named, position_of, expected):
    assert rewrite_reference(text, named, position_of) == expected


def test_letter_list_reads_letters_and_connectives_only():
    assert letter_list("Both A and C").letters == ("A", "C")
    assert letter_list("A，B和C均对").letters == ("A", "B", "C")
    for content in ("Both A and C; either condition would do", "B6 and D", "vitamin A and C", "DA"):
        assert letter_list(content) is None
