"""Prepare one dataset for scoring: permute its rows, build and tokenize the prompts, resolve the
label ids, and fit the prompts to the model's context. The same on every process."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import datasets

from ..data.load import LoadedDataset, limit_per_subject
from ..errors import TwinkleError
from ..settings.config import EvalConfig
from .letters import resolve_letter_ids
from .permute import expand_permutations
from .templates import benchmark_template, build_prompt_set, resolve_template
from .tokenize import encode_grouped
from .twinkle_style import LABEL_PREFIX as TWINKLE_LABEL_PREFIX
from .twinkle_style import shown_texts, twinkle_prompts


class PrefixGroup(NamedTuple):
    """The key of rows that may share a prompt prefix (the scorer finds the shared tokens).

    One few-shot ``block``, or zero-shot, one ``question``'s orders. ``shots`` is the number of
    examples kept where the block was shortened to fit the context (-1: not shortened)."""

    block: int
    question: str = ""
    shots: int = -1


def _prompt_texts(cfg: EvalConfig, data: LoadedDataset, rows: datasets.Dataset, tokenizer: Any,
                  blank_questions: bool = False) -> tuple[list[str], str, list[PrefixGroup] | None]:
    """Prompt strings for the permuted rows, the text between prompt and label, and each row's
    prefix group (None: no sharing).

    ``blank_questions``: every question text (few-shot ones too) shown empty, for the choices-only
    probe; the orders are still those of the real questions."""
    if cfg.prompt_style == "twinkle":  # Twinkle Eval's own texts: zero-shot, nothing added
        questions, choices = shown_texts(data, rows)
        texts = twinkle_prompts([""] * len(questions) if blank_questions else questions, choices, cfg.generates)
        label_prefix, block_ids = TWINKLE_LABEL_PREFIX, [0] * len(texts)
    else:
        bench = data.benchmark
        template = (benchmark_template(bench, cfg.templates) if bench
                    else resolve_template(cfg.prompt_lang, cfg.templates))
        built = build_prompt_set(rows, template, num_fewshot=cfg.num_fewshot, pool=data.fewshot,
                                 self_pool=data.rows, shuffled=cfg.permutation_mode != "none", seed=cfg.seed,
                                 by_subject=not bench or bench.fewshot_scope == "subject",
                                 keep_meaning=cfg.keep_option_meaning, blank_questions=blank_questions)
        texts, label_prefix, block_ids = built.texts, template.label_prefix, built.block_ids
        if cfg.generates:  # the question block asks for the answer instead of ending with the cue
            cut = len(template.answer_cue)
            texts = [t[:len(t) - cut] + template.instruction(cfg.method) for t in texts]
    groups: list[PrefixGroup] | None = None
    if cfg.share_prefix:
        groups = [PrefixGroup(block, "" if cfg.num_fewshot else qid)
                  for block, qid in zip(block_ids, rows["id"][:])]
    system = _system_prompt(cfg)
    if not use_chat_template(cfg, tokenizer):
        return ([system + "\n\n" + t for t in texts] if system else texts), label_prefix, groups
    messages = [{"role": "system", "content": system}] if system else []
    wrapped = [tokenizer.apply_chat_template(messages + [{"role": "user", "content": t}], tokenize=False,
                                             add_generation_prompt=True, **_template_variables(cfg)) for t in texts]
    return wrapped, "", groups  # the assistant's reply starts with the letter itself


def use_chat_template(cfg: EvalConfig, tokenizer: Any) -> bool:
    """Whether prompts are chat-templated: as asked, else in generation mode when the tokenizer has one."""
    has = bool(getattr(tokenizer, "chat_template", None))
    if cfg.apply_chat_template and not has:
        raise TwinkleError("--apply-chat-template: this tokenizer has no chat template; drop the flag")
    return cfg.apply_chat_template if cfg.apply_chat_template is not None else (cfg.generates and has)


def _system_prompt(cfg: EvalConfig) -> str:
    """The system message for this prompt language ("" for none)."""
    if isinstance(cfg.system_prompt, Mapping):
        return cfg.system_prompt.get(cfg.prompt_lang, "")
    return cfg.system_prompt or ""


def _template_variables(cfg: EvalConfig) -> dict[str, Any]:
    """Chat template variables. Letter scoring reads the first token of the reply, so a thinking
    template must not open <think> there; generation mode passes --thinking (auto: nothing)."""
    thinking = {"on": {"enable_thinking": True}, "off": {"enable_thinking": False}, "auto": {}}[cfg.thinking]
    return {**({"enable_thinking": False} if not cfg.generates else thinking), **cfg.chat_template_kwargs}


def _letter_ids(tokenizer: Any, texts: Sequence[str], ks: Sequence[int], prefix: str, special: bool) -> list[list[int]]:
    """Label ids per row, resolved in context once per option count (and cross-checked on a
    second prompt, since every prompt ends with the same cue)."""
    by_k: dict[int, list[int]] = {}
    for k in sorted(set(ks)):
        rows = [i for i, kk in enumerate(ks) if kk == k]
        ids = resolve_letter_ids(tokenizer, texts[rows[0]], k, prefix, special)
        other = resolve_letter_ids(tokenizer, texts[rows[-1]], k, prefix, special)
        if other != ids:
            raise TwinkleError(f"option labels tokenize differently in different prompts ({ids} vs {other}); "
                               f"check the template's answer_cue")
        by_k[k] = ids
    return [by_k[k] for k in ks]


@dataclass
class Prepared:
    """One dataset's permuted rows, ready to score."""

    rows: datasets.Dataset
    texts: list[str]
    token_ids: list[list[int]]
    letter_ids: list[list[int]]
    groups: list[PrefixGroup] | None
    fewshot_truncated: int = 0  # rows whose few-shot block was shortened to fit the context
    blank_questions: bool = False  # the choices-only probe: question texts shown empty


def _fit_context(cfg: EvalConfig, data: LoadedDataset, prep: Prepared, tokenizer: Any, max_tokens: int | None) -> None:
    """Policy for prompts longer than the model's context: drop few-shot examples (last first) from
    those rows until they fit, counting them; a prompt too long even with none is an error."""
    too_long = [i for i, t in enumerate(prep.token_ids) if max_tokens and len(t) > max_tokens]
    if not too_long or max_tokens is None:
        return
    special = not use_chat_template(cfg, tokenizer)
    for shots in range(cfg.num_fewshot - 1, -2, -1):
        if shots < 0:
            i = too_long[0]
            raise TwinkleError(f"dataset {data.name}: question {prep.rows[i]['id']!r} needs "
                               f"{len(prep.token_ids[i])} tokens without few-shot examples but the model "
                               f"takes at most {max_tokens}")
        subset = prep.rows.select(too_long)
        texts, _, _ = _prompt_texts(dataclasses.replace(cfg, num_fewshot=shots), data, subset, tokenizer,
                                    prep.blank_questions)
        ids = tokenizer(texts, add_special_tokens=special)["input_ids"]
        still = []
        for j, i in enumerate(too_long):
            if len(ids[j]) <= max_tokens:
                prep.texts[i], prep.token_ids[i] = texts[j], ids[j]
                if prep.groups is not None:
                    prep.groups[i] = prep.groups[i]._replace(shots=shots)
                prep.fewshot_truncated += 1
            else:
                still.append(i)
        too_long = still
        if not too_long:
            return


TOKENIZE_CHUNK = 4096  # prompts per tokenizer call under a progress bar


def _tokenize(tokenizer: Any, texts: list[str], groups: Sequence[Any] | None, special: bool,
              progress: bool) -> list[list[int]]:
    """Every prompt's token ids, a group's shared start tokenized once (tokenize.py).

    With ``progress``, in chunks under a progress bar on stderr. A group's rows stay in one chunk
    where they are together, and the ids are those of one call either way."""
    if not progress:
        return encode_grouped(tokenizer, texts, groups, special)
    from tqdm.auto import tqdm

    ids: list[list[int]] = []
    with tqdm(total=len(texts), desc="tokenizing prompts", unit="prompt", file=sys.stderr) as bar:
        for start in range(0, len(texts), TOKENIZE_CHUNK):
            chunk = slice(start, start + TOKENIZE_CHUNK)
            ids += encode_grouped(tokenizer, texts[chunk], None if groups is None else groups[chunk], special)
            bar.update(min(TOKENIZE_CHUNK, len(texts) - start))
    return ids


def prepare_dataset(tokenizer: Any, data: LoadedDataset, cfg: EvalConfig, max_tokens: int | None,
                    progress: bool = False, blank_questions: bool = False) -> Prepared:
    """Permute, prompt and tokenize one dataset, the same on every process.

    ``max_tokens`` is the model's context length (None: unknown), not ``cfg.limit`` (questions per
    subject). ``progress``: a progress bar while tokenizing (the dry run's longest step).
    ``blank_questions``: the prompts of the choices-only probe (the question texts empty, the
    orders those of the questions as written)."""
    rows = limit_per_subject(data.rows, cfg.limit)
    if len(rows) == 0:
        raise TwinkleError(f"dataset {data.name}: split {cfg.split!r} has no rows to evaluate")
    rows = expand_permutations(rows, cfg.permutation_mode, cfg.seed, cfg.seeds, cfg.score_original,
                               cfg.keep_option_meaning)
    if blank_questions:
        rows = rows.map(lambda _: {"question": ""}, keep_in_memory=True)
    texts, prefix, groups = _prompt_texts(cfg, data, rows, tokenizer, blank_questions)
    special = not use_chat_template(cfg, tokenizer)  # a rendered chat template already holds its BOS
    ks = [len(c) for c in rows["choices"][:]]
    letter_ids = [] if cfg.generates else _letter_ids(tokenizer, texts, ks, prefix, special)
    token_ids = _tokenize(tokenizer, texts, groups, special, progress)
    prep = Prepared(rows, texts, token_ids, letter_ids, groups, blank_questions=blank_questions)
    _fit_context(cfg, data, prep, tokenizer, max_tokens)
    return prep
