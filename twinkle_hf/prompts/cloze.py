"""Cloze prompts (``--method cloze``): each option's *text* is scored as a continuation of the
question, as lm-evaluation-harness scores ARC, HellaSwag and its ``*_continuation`` tasks.

A question's context is ``description + examples + cloze_question`` (no options, no letters), each
option's continuation ``cloze_delimiter + text``; a few-shot example is its question followed by
the delimiter and its gold option's text. Tokens follow lm-eval's ``_encode_pair``: trailing spaces
of the context move onto the continuation, ``whole = encode(context + continuation)``, and the
continuation's tokens are ``whole[len(encode(context)):]``. The model reads ``context +
continuation`` without its last token and the continuation's tokens are scored, so the k options
of a question share the context as a prefix (the scorer runs it once).

Option order plays no part: a question is scored once, in its original order, whatever
``--shuffle`` asks of the letter formulation (a benchmark whose lm-eval context lists the options,
LogiQA's, lists them in that order).

Partial scoring (Winogrande, lm-eval's "partial evaluation"): the question is a sentence with a blank
``_``; each option fills the blank, and the rest of the sentence after it is the continuation scored,
the same text for every option. Each option has its own context (the shared start of the sentence,
then the option), scored once, and the options of a question share a prefix group.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import datasets

from ..data.load import LoadedDataset, limit_per_subject
from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .templates import PromptTemplate, benchmark_template, fewshot_examples, format_options, resolve_template
from .tokenize import encode_texts


@dataclass(frozen=True)
class ClozePrompts:
    """One dataset's cloze requests: per question its context, per option (question-major) the
    tokens the model reads and the continuation tokens that are scored."""

    rows: datasets.Dataset  # the questions, original order (after --limit)
    contexts: list[str]  # per question
    context_tokens: list[int]  # per question: its context's length in tokens
    token_ids: list[list[int]]  # per option: context + continuation, without the continuation's last token
    targets: list[list[int]]  # per option: the continuation's tokens
    question: list[int]  # per option: its question (index into rows)
    groups: list[int] | None  # per option: the key of rows sharing a prefix (its question), None: no sharing


def format_cloze_question(template: PromptTemplate, question: str, choices: Sequence[str] = ()) -> str:
    """The question block of a cloze prompt, ending with its cue; the options only where the
    benchmark's block shows them (``{options}``: LogiQA), in their original order."""
    text = question.strip() if template.cloze_strip else question
    if "{options}" in template.cloze_question:
        return template.cloze_question.format(question=text, options=format_options(template, choices))
    return template.cloze_question.format(question=text)


def fill_blank(sentence: str, option: str) -> tuple[str, str]:
    """Winogrande: (the sentence up to its blank with ``option`` in it, the rest after the blank, stripped)."""
    at = sentence.index("_")
    return sentence[:at] + option, sentence[at + 1:].strip()


def _description(template: PromptTemplate, subject: str) -> str:
    """The description before the examples ("" without a subject or a description)."""
    if not subject or not template.cloze_description:
        return ""
    return template.cloze_description.format(subject=subject.replace("_", " "))


def cloze_contexts(rows: datasets.Dataset, template: PromptTemplate, num_fewshot: int, pool: datasets.Dataset | None,
                   self_pool: datasets.Dataset | None, by_subject: bool = True) -> list[str]:
    """Each question's context: description, k solved examples (the first k of its subject in the
    few-shot pool, never the question itself), the question block."""
    source = pool if pool is not None else self_pool
    blocks: dict[tuple[str, str | None], str] = {}
    out = []
    for subject, qid, question, choices in zip(rows["subject"][:], rows["id"][:], rows["question"][:],
                                               rows["choices"][:]):
        exclude = qid if num_fewshot and (pool is None or pool is self_pool) else None
        key = (subject, exclude)
        if key not in blocks:
            examples: list[str] = []
            if num_fewshot:
                if source is None:
                    raise TwinkleError("--num-fewshot needs a few-shot split or the evaluated data as a pool")
                chosen = fewshot_examples(source, subject if by_subject else None, num_fewshot, exclude)
                examples = [_solved(template, r) for r in chosen]
            blocks[key] = _description(template, subject) + "".join(e + template.fewshot_separator for e in examples)
        out.append(blocks[key] + ("" if template.cloze_question == PARTIAL else
                                  format_cloze_question(template, question, choices)))
    return out


PARTIAL = "{partial}"  # the cloze question of partial scoring: the context is the filled sentence start


def _solved(template: PromptTemplate, row: dict) -> str:
    """A few-shot example: its question and gold option text (partial: the whole filled sentence)."""
    gold = row["choices"][row["answer"]]
    if template.cloze_question == PARTIAL:
        start, rest = fill_blank(row["question"], gold)
        return start + template.cloze_delimiter + rest
    return format_cloze_question(template, row["question"], row["choices"]) + template.cloze_delimiter + gold


def cloze_requests(rows: datasets.Dataset, template: PromptTemplate, blocks: list[str]
                   ) -> tuple[list[list[str]], list[list[str]]]:
    """Per question, the context of each option and the continuation each scores.

    Usually one context, and every option text after the delimiter. With partial scoring, a context
    per filled-in option, and the rest of the sentence after the delimiter for each."""
    contexts, continuations = [], []
    for block, question, choices in zip(blocks, rows["question"][:], rows["choices"][:]):
        if template.cloze_question == PARTIAL:
            filled = [fill_blank(question, option) for option in choices]
            contexts.append([block + start for start, _ in filled])
            continuations.append([template.cloze_delimiter + rest for _, rest in filled])
        else:
            contexts.append([block] * len(choices))
            continuations.append([template.cloze_delimiter + text for text in choices])
    return contexts, continuations


def encode_pairs(tokenizer: Any, contexts: Sequence[str], continuations: Sequence[Sequence[str]],
                 special: bool) -> tuple[list[list[int]], list[list[list[int]]]]:
    """lm-eval's ``_encode_pair`` for every (context, continuation): per context its tokens, per
    continuation its tokens. An empty context is conditioned on the BOS (else EOS) token, as lm-eval
    does."""
    moved = [c[len(c.rstrip()):] for c in contexts]  # trailing spaces move onto the continuation
    bare = [c.rstrip() for c in contexts]
    context_ids = encode_texts(tokenizer, [c for c in bare if c], special) if any(bare) else []
    pairs = [b + m + text for b, m, texts in zip(bare, moved, continuations) for text in texts]
    wholes = encode_texts(tokenizer, pairs, special)
    prefix = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    ctx_out: list[list[int]] = []
    cont_out: list[list[list[int]]] = []
    at, w = 0, 0
    for b, m, texts in zip(bare, moved, continuations):
        mine = []
        if b:
            ctx = list(context_ids[at])
            at += 1
            for _ in texts:
                mine.append(list(wholes[w][len(ctx):]))
                w += 1
        else:  # lm-eval: (prefix token) + continuation, continuation encoded without special tokens
            ctx = [prefix]
            for text in texts:
                mine.append(encode_texts(tokenizer, [m + text], False)[0])
                w += 1
        ctx_out.append(ctx)
        cont_out.append(mine)
    return ctx_out, cont_out


def cloze_texts(data: LoadedDataset, cfg: EvalConfig) -> tuple[datasets.Dataset, list[list[str]], list[list[str]]]:
    """The evaluated rows (after --limit) and, per question, each option's context and continuation text."""
    rows = limit_per_subject(data.rows, cfg.limit)
    if len(rows) == 0:
        raise TwinkleError(f"dataset {data.name}: split {cfg.split!r} has no rows to evaluate")
    bench = data.benchmark
    template = benchmark_template(bench, cfg.templates) if bench else resolve_template(cfg.prompt_lang, cfg.templates)
    if bench and bench.cloze_scoring == "partial":
        template = dataclasses.replace(template, cloze_question=PARTIAL)
    blocks = cloze_contexts(rows, template, cfg.num_fewshot, data.fewshot, data.rows,
                            by_subject=not bench or bench.fewshot_scope == "subject")
    return (rows, *cloze_requests(rows, template, blocks))


def prepare_cloze(tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, max_tokens: int | None) -> ClozePrompts:
    """The cloze requests of one dataset (the same on every process)."""
    rows, per_option, continuations = cloze_texts(data, cfg)
    contexts = [c[0] for c in per_option]
    option_ctx: list[list[list[int]]] = []  # per question, per option: its context's tokens
    cont_ids: list[list[list[int]]] = []
    if all(len(set(c)) == 1 for c in per_option):  # one context per question: encoded once
        ctx_ids, cont_ids = encode_pairs(tokenizer, contexts, continuations, special=True)
        option_ctx = [[ctx] * len(conts) for ctx, conts in zip(ctx_ids, cont_ids)]
    else:  # partial scoring: each option its own context
        flat_ids, flat_conts = encode_pairs(tokenizer, [c for cs in per_option for c in cs],
                                            [[t] for ts in continuations for t in ts], special=True)
        at = 0
        for texts in continuations:
            option_ctx.append(flat_ids[at:at + len(texts)])
            cont_ids.append([c[0] for c in flat_conts[at:at + len(texts)]])
            at += len(texts)
        ctx_ids = [c[0] for c in option_ctx]
    token_ids: list[list[int]] = []
    targets: list[list[int]] = []
    question: list[int] = []
    for q, (ctxs, conts) in enumerate(zip(option_ctx, cont_ids)):
        for j, (ctx, cont) in enumerate(zip(ctxs, conts)):
            if not cont:
                raise TwinkleError(f"dataset {data.name}: question {rows[q]['id']!r}: option {j} tokenizes to "
                                   f"nothing after its question; check the option text")
            if max_tokens and len(ctx) + len(cont) - 1 > max_tokens:
                raise TwinkleError(f"dataset {data.name}: question {rows[q]['id']!r} with option {j} needs "
                                   f"{len(ctx) + len(cont) - 1} tokens but the model takes at most {max_tokens}; "
                                   f"lower --num-fewshot")
            token_ids.append(ctx + cont[:-1])
            targets.append(cont)
            question.append(q)
    groups = list(question) if cfg.share_prefix else None
    return ClozePrompts(rows, contexts, [len(c) for c in ctx_ids], token_ids, targets, question, groups)
