"""Options whose meaning depends on where they stand, found once per question, before any shuffle.

A shuffle must not change the question. Two kinds of option do not survive a plain shuffle:

- a *place-naming* option refers to the options around it as a group by place: "All of the above",
  "None of the above", "Both of these", 以上都不对, 上記のすべて. At A, "all of the above" refers to
  nothing. It is *pinned*: it keeps its letter in every order, and the others move among the rest.
- a *letter reference* consists of the letters of other options of the same question and a few
  connective words: "Both A and C", "(A) and (C)", "b and c", "Neither (a) nor (b).", "A和B均正确",
  "AB". It moves like any option, and its letters are rewritten to where the options it names now
  stand (sorted: "Both A and C" becomes "Both B and D", never "Both D and B"), keeping its words,
  case, brackets and punctuation.

Look-alikes stay content: vitamins ("A and C" beside "B6 and D"), "C, Ruby", an option that names
its own letter (a data error), and questions whose options are all letter lists ("AB" / "AC" /
"BD": those name statements in the question text). A question whose text names options by letter
("Which of options A and C ...") keeps its original order in every order.

Pure functions of the question and its options: no seed, no model.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..schema import LETTERS


@dataclass(frozen=True)
class OptionRoles:
    """What a question's options say about places: ``pinned`` original indices keep their letter;
    ``refs[i]`` are the original indices option i names by letter; ``fixed`` keeps the original order."""

    pinned: tuple[int, ...] = ()
    refs: dict[int, tuple[int, ...]] = field(default_factory=dict)
    fixed: bool = False

    @property
    def plain(self) -> bool:
        """True when a plain shuffle keeps the question: nothing pinned, referenced or fixed."""
        return not (self.pinned or self.refs or self.fixed)


PLAIN = OptionRoles()

# ---- place-naming ("collective") options ------------------------------------------------------
_GROUP_EN = re.compile(
    r"^\W*(?:"
    # all / none / both / neither / either / any / each (of) the above | of (the) above | the preceding
    r"(?:all|none|both|neither|nither|either|any|each|any one|any two|any 2)\s+(?:of\s+)?(?:the\s+)?"
    r"(?:above|preceding|foregoing|aforementioned)\b"
    r"|(?:all|none|both|neither|either|any|each|any one|any two|any 2)\s+of\s+(?:these|them|those)\b"
    r"|(?:all|none|both|neither|either|any|each)\s+of\s+the\s+(?:options|choices|answers|statements|alternatives)"
    r"(?:\s+(?:given|listed|above|provided))?\b"
    r"|(?:all|none)\s+(?:the\s+)?(?:above|preceding)\b"
    r"|above\s+of\s+the\s+above\b"
    r")",
    re.IGNORECASE,
)
# 以上都不对 / 以上全部 / 上述说法都正确 (not "60岁以上": the option must start with it)
_ZH_START = ("以上", "上述", "上面", "前述")
_ZH_NEXT = ("选项", "選項", "说法", "說法", "答案", "结论", "結論", "各项", "各項", "三项", "三項", "四项", "四項",
            "两者", "兩者", "二者", "三者", "四者", "都", "均", "皆", "全", "所有", "者", "各")
_ZH_WHOLE = ("全部都是", "都不是", "都不对", "都不對", "均不正确", "均不正確", "全部正确", "全部正確", "都对", "都對",
             "都正确", "都正確", "全对", "全對", "全是", "都可以", "都有可能")
# 以上 + up to six characters + 都/均/皆/全 ("以上三点都对", "上述措施均无法...", but not "以上三个平面相互垂直")
_GROUP_ZH = re.compile(rf"^\W*(?:{'|'.join(_ZH_START)})(?:[的各]?(?:{'|'.join(_ZH_NEXT)})|[^\s\W]{{0,6}}?[都均皆全])"
                       rf"|^\W*(?:{'|'.join(_ZH_WHOLE)})\W*$")
# 上記のすべて / 以上すべて / 上記のいずれでもない / 上記以外
_GROUP_JA = re.compile(r"^\W*(?:上記|以上|前記)(?:の|は|に)?(?:すべて|全て|いずれ|どれ|何れ|両方|どちら|以外)")
# 위의 모든 것 / 위 모두 / 모두 정답 / 정답 없음
_KO_NEXT = ("모든", "모두", "것\\s*모두", "보기\\s*모두", "어느", "것\\s*중", "둘\\s*다", "전부", "어떤", "답")
_KO_WHOLE = ("모두\\s*정답", "정답\\s*없음", "모두\\s*맞음", "모두\\s*옳음", "모두\\s*틀림", "해당\\s*없음")
_GROUP_KO = re.compile(rf"^\W*(?:위의?|상기|앞의)\s*(?:{'|'.join(_KO_NEXT)})|^\W*(?:{'|'.join(_KO_WHOLE)})\W*$")


def names_its_place(text: str) -> bool:
    """Whether an option refers to the options around it as a group by place ("all of the above")."""
    t = text.strip()
    return bool(_GROUP_EN.match(t) or _GROUP_ZH.match(t) or _GROUP_JA.match(t) or _GROUP_KO.match(t))


# ---- letter references ------------------------------------------------------------------------
# Words that may stand between the letters of a reference; anything else makes the option content.
_CONNECTIVES = re.compile(
    r"\s+|[,;:.&$、，。；：]|\band\b|\bor\b|\bboth\b|\bonly\b|\bneither\b|\bnether\b|\bnor\b|\beither\b"
    r"|\bare\b|\bis\b"
    r"|\bcorrect\b|\btrue\b|\bright\b|\boptions?\b|\bchoices?\b|\banswers?\b|\bthe\b"
    r"|以及|或者|和|与|與|及|或|均|都|皆|全|对|對|是|不|可|正确|正確|选项|選項|项|項"
    r"|와|과|및|모두|정답|옳다|옳음|および|と|両方|正しい",
    re.IGNORECASE)
# One letter slot: an optional bracket, a letter, an optional bracket ("(A)", "a)", "C"), or a run
# of two or more capitals written together ("AB", "ACD", the Chinese style).
_SLOT = re.compile(r"[(（\[]?([A-Za-z])[)）\]]?(?![A-Za-z])|(?<![A-Za-z])([A-Z]{2,})(?![A-Za-z])")
_NAME_LIKE = re.compile(r"(?<![A-Za-z0-9])[A-Z]\d")  # B6, B12, C3: letters used as names, not places


@dataclass(frozen=True)
class _Slots:
    """An option read as a letter list: its letters (upper case) and where each stands in the text."""

    letters: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]


def _ascending(run: str) -> bool:
    """A run of capitals read as letters ("AB", "ACD") is written in order; "DA" is a name."""
    return len(run) > 1 and all(a < b for a, b in itertools.pairwise(run))


def letter_list(text: str) -> _Slots | None:
    """The option read as letters and connective words only (None: it holds other words)."""
    letters: list[str] = []
    spans: list[tuple[int, int]] = []
    pos, t = 0, text
    while pos < len(t):
        m = _SLOT.match(t, pos)
        if m and (m.group(1) or _ascending(m.group(2) or "")):
            group = 1 if m.group(1) else 2
            start = m.start(group)
            for j, ch in enumerate(m.group(group)):
                letters.append(ch.upper())
                spans.append((start + j, start + j + 1))
            pos = m.end()
            continue
        c = _CONNECTIVES.match(t, pos)
        if not c or c.end() == pos:
            return None
        pos = c.end()
    return _Slots(tuple(letters), tuple(spans)) if letters else None


def _references(choices: Sequence[str], pinned: set[int]) -> dict[int, tuple[int, ...]]:
    """Options that name two or more *other* options of the question by letter (see module docstring)."""
    k = len(choices)
    lists = {i: letter_list(c) for i, c in enumerate(choices)}
    content = [i for i in range(k) if i not in pinned]
    if content and all(lists[i] is not None for i in content):
        return {}  # every option a letter list: they name statements in the question, not options
    if any(_NAME_LIKE.search(c) for c in choices):
        return {}  # "B6 and D": letters are names here (vitamins), not places
    refs: dict[int, tuple[int, ...]] = {}
    for i, slots in lists.items():
        if slots is None or i in pinned:
            continue
        named = [LETTERS.index(L) for L in slots.letters if L in LETTERS[:k]]
        if len(named) != len(slots.letters) or len(set(named)) < 2 or i in named:
            continue  # a letter past the last option, a lone letter, or its own letter (a data error)
        refs[i] = tuple(named)
    return refs


# ---- a question text that names options by letter ------------------------------------------------
_TEXT_NAMES_EN = re.compile(r"\b(?:options?|choices?|answers?|alternatives?)\s*\(?([A-Z])\)?"
                            r"(?:\s*(?:,|and|or|&)\s*\(?([A-Z])\)?)*(?![\w'-])")
_TEXT_NAMES_ZH = re.compile(r"(?:选项|選項)\s*([A-Z])(?![A-Za-z])|(?<![A-Za-z])([A-Z])\s*(?:项|項|选项|選項)")


def text_names_options(question: str, k: int) -> bool:
    """Whether the question text names one of its options by letter ("Which of options A and C")."""
    allowed = set(LETTERS[:k])
    for m in list(_TEXT_NAMES_EN.finditer(question)) + list(_TEXT_NAMES_ZH.finditer(question)):
        if any(g in allowed for g in m.groups() if g):
            return True
    return False


def classify_options(question: str, choices: Sequence[str]) -> OptionRoles:
    """The roles of a question's options (module docstring); PLAIN for an ordinary question."""
    k = len(choices)
    if text_names_options(question, k):
        return OptionRoles(fixed=True)
    pinned = tuple(i for i, c in enumerate(choices) if names_its_place(c))
    refs = _references(choices, set(pinned))
    return OptionRoles(pinned, refs) if pinned or refs else PLAIN


def rewrite_reference(text: str, named: Sequence[int], position_of: Sequence[int]) -> str:
    """``text``, a letter reference naming original options ``named``, with its letters moved.

    Each letter slot is set to where the named options stand (``position_of[i]``: the displayed
    position of original option i), in sorted order. Each slot keeps its case, and everything
    around the letters is unchanged."""
    slots = letter_list(text)
    assert slots is not None and len(slots.letters) == len(named), (text, named)
    new = sorted(LETTERS[position_of[i]] for i in named)
    out, last = [], 0
    for (start, end), letter in zip(slots.spans, new):
        out.append(text[last:start])
        out.append(letter if text[start:end].isupper() else letter.lower())
        last = end
    out.append(text[last:])
    return "".join(out)
