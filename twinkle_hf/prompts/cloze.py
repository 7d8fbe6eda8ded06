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
``--shuffle`` asks of the letter formulation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import datasets

from ..data.load import LoadedDataset, limit_per_subject
from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .templates import PromptTemplate, benchmark_template, fewshot_examples, resolve_template
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


def format_cloze_question(template: PromptTemplate, question: str) -> str:
    """The question block of a cloze prompt (ending with its cue, no options)."""
    return template.cloze_question.format(question=question.strip() if template.cloze_strip else question)


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
    for subject, qid, question in zip(rows["subject"][:], rows["id"][:], rows["question"][:]):
        exclude = qid if num_fewshot and (pool is None or pool is self_pool) else None
        key = (subject, exclude)
        if key not in blocks:
            examples: list[str] = []
            if num_fewshot:
                if source is None:
                    raise TwinkleError("--num-fewshot needs a few-shot split or the evaluated data as a pool")
                chosen = fewshot_examples(source, subject if by_subject else None, num_fewshot, exclude)
                examples = [format_cloze_question(template, r["question"]) + template.cloze_delimiter
                            + r["choices"][r["answer"]] for r in chosen]
            blocks[key] = _description(template, subject) + "".join(e + template.fewshot_separator for e in examples)
        out.append(blocks[key] + format_cloze_question(template, question))
    return out


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


def prepare_cloze(tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, max_tokens: int | None) -> ClozePrompts:
    """The cloze requests of one dataset (the same on every process)."""
    rows = limit_per_subject(data.rows, cfg.limit)
    if len(rows) == 0:
        raise TwinkleError(f"dataset {data.name}: split {cfg.split!r} has no rows to evaluate")
    bench = data.benchmark
    template = benchmark_template(bench, cfg.templates) if bench else resolve_template(cfg.prompt_lang, cfg.templates)
    contexts = cloze_contexts(rows, template, cfg.num_fewshot, data.fewshot, data.rows,
                              by_subject=not bench or bench.fewshot_scope == "subject")
    choices = rows["choices"][:]
    continuations = [[template.cloze_delimiter + text for text in c] for c in choices]
    ctx_ids, cont_ids = encode_pairs(tokenizer, contexts, continuations, special=True)
    token_ids, targets, question = [], [], []
    for q, (ctx, conts) in enumerate(zip(ctx_ids, cont_ids)):
        for j, cont in enumerate(conts):
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
