"""The flags of `twinkle-hf eval` (and the command list above them in --help): one argparse parser.

Flags default to None so that only what the user typed overrides the YAML config; cli.py turns the
parsed namespace into an EvalConfig.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Mapping, Sequence

from .errors import OneLineParser, TwinkleError
from .settings.checks import EXTRACTORS, PROMPT_LANGS, PROMPT_STYLES, THINKING
from .settings.config import DTYPES, SHUFFLE_MODES
from .settings.methods import METHODS, PROBES
from .settings.values import parse_batch_size


def _batch_size(text: str) -> int | str:
    try:
        return parse_batch_size(text)
    except TwinkleError:
        raise argparse.ArgumentTypeError(f"must be 'auto' or a positive integer, not {text!r}") from None


def _on_off(text: str) -> bool:
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"must be 'on' or 'off', not {text!r}")
    return text == "on"


def _json_object(text: str) -> dict:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise argparse.ArgumentTypeError(f"not valid JSON ({err}); e.g. '{{\"enable_thinking\": false}}'") from None
    if not isinstance(value, dict):
        raise argparse.ArgumentTypeError(f"must be a JSON object, not {type(value).__name__}")
    return value


# What `twinkle-hf --help` says above the eval flags: every subcommand (see COMMANDS and main).
DESCRIPTION = """\
Multiple-choice evaluation of a local Hugging Face causal LM, with option
shuffling and positional-bias metrics.

commands (twinkle-hf COMMAND ...):
  eval --model M [flags]        evaluate a model; the default command, so
                                "eval" may be left out (its flags are below)
  report RUN_DIR [RUN_DIR ...]  rebuild a finished run's reports from its
                                files (no model)
  compare RUN_DIR RUN_DIR ...   runs side by side, with paired differences
                                against the first
  benchmarks [NAME[=PATH]]      the benchmarks --benchmark knows, or one
                                rendered prompt of one
  merge SHARD_DIR... --output-dir OUT
                                join the runs of --shard 0/N .. N-1/N into
                                the one run they split (no model weights)
  report --help, compare --help, merge --help
                                the flags of those commands"""


def build_parser() -> argparse.ArgumentParser:
    """Flags default to None so that only what the user typed overrides the YAML config."""
    p = OneLineParser(prog="twinkle-hf", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="local model directory, hub id, .gguf file; a glob ('out/checkpoint-*') "
                   "or comma-separated list evaluates each and writes a trend")
    p.add_argument("--dataset", dest="datasets", action="append", metavar="PATH_OR_ID",
                   help="dataset file/dir/save_to_disk dir/hub id (repeatable); default: embedded MMLU sample")
    p.add_argument("--benchmark", dest="benchmarks", action="append", metavar="NAME[=PATH]",
                   help="a benchmark by name, as lm-eval runs it (repeatable): mmlu, cmmlu, ceval, tmmluplus, "
                        "mmlu_pro, global_mmlu:ja, ...; NAME=PATH reads a local copy (`twinkle-hf benchmarks` lists "
                        "them)")
    p.add_argument("--subjects", help="only these subjects, comma-separated (e.g. anatomy,astronomy)")
    p.add_argument("--config", help="YAML file in the shape of configs/*.yaml; flags override it")
    p.add_argument("--shuffle", action="store_true", default=None, help="permute the options (mode random)")
    p.add_argument("--shuffle-mode", choices=SHUFFLE_MODES, help="random (default): --seeds independent orders per "
                   "question; cyclic: the k rotations of one order (every option in every place once); all: all k! "
                   "orders; none: the original order only. Any but none implies --shuffle")
    p.add_argument("--seeds", type=int, help="random permutations per question (default 5)")
    p.add_argument("--seed", type=int, help="base seed (default 1234)")
    p.add_argument("--keep-option-meaning", type=_on_off, metavar="{on,off}",
                   help="on (default): a shuffle keeps each question's meaning: 'all of the above' keeps its "
                        "letter, 'Both A and C' names where A and C now stand; off: shuffle every option as written")
    p.add_argument("--split", help="split to evaluate (default test)")
    p.add_argument("--fewshot-split", help="few-shot pool (default dev)")
    p.add_argument("--num-fewshot", type=int, help="k-shot examples (default 0)")
    p.add_argument("--limit", type=int, help="at most N questions per subject (smoke runs)")
    p.add_argument("--batch-size", type=_batch_size, help="auto (default) or a positive integer")
    p.add_argument("--device", help="auto (default), cpu, cuda, cuda:N, mps")
    p.add_argument("--dtype", choices=DTYPES, help="auto (default): the checkpoint's own dtype (float16 becomes "
                   "bfloat16 on CPU)")
    p.add_argument("--output-dir", help="default results/<model>/<timestamp>/ (a new folder each run); a folder "
                   "holding a finished run is refused unless --overwrite")
    p.add_argument("--overwrite", action="store_true", default=None,
                   help="replace the finished (or unfinished) run in --output-dir: its files are removed first")
    p.add_argument("--offline", action="store_true", default=None, help="never touch the network")
    p.add_argument("--column-map", help="e.g. question=query,choices=opa|opb|opc|opd,answer=gold")
    p.add_argument("--on-bad-row", choices=("error", "skip"), help="a row with no question, fewer than 2 options or "
                   "an answer not among them: error (default: one line naming file, row and column) or skip (counted "
                   "in the report)")
    p.add_argument("--prompt-lang", choices=PROMPT_LANGS, help="en (default: lm-eval's English prompt) or zh "
                   "(Traditional Chinese template)")
    p.add_argument("--apply-chat-template", action="store_true", default=None,
                   help="wrap each prompt in the tokenizer's chat template (the default in generation mode)")
    p.add_argument("--no-chat-template", dest="apply_chat_template", action="store_false",
                   help="plain-text prompts in generation mode too")
    p.add_argument("--chat-template-kwargs", type=_json_object, metavar="JSON",
                   help='variables for the chat template, e.g. \'{"enable_thinking": false}\' (the default for '
                        'letter scoring)')
    p.add_argument("--log-prompts", action="store_true", default=None, help="write each prompt to predictions.jsonl")
    p.add_argument("--trust-remote-code", action="store_true", default=None,
                   help="run the Python code a model's repository ships (off unless given: only for repositories "
                        "you trust)")
    p.add_argument("--revision", help="hub revision of the model")
    p.add_argument("--device-map", help="e.g. auto: split one large model over this process's GPUs (layers in turn)")
    p.add_argument("--tensor-parallel", type=int, metavar="N",
                   help="split the model N ways over each group of N processes (torchrun/accelerate launch; "
                        "all GPUs busy in every pass); the groups split the rows")
    p.add_argument("--no-share-prefix", dest="share_prefix", action="store_false", default=None,
                   help="score every prompt in full (no shared-prefix KV reuse)")
    p.add_argument("--probe", choices=PROBES, help="choices-only: score every prompt again with the question "
                   "text removed (few-shot questions too): does the answer show from the options alone?")
    g = p.add_argument_group("generation mode (instruct and reasoning models: the model writes, the letter is "
                             "extracted)")
    g.add_argument("--method", choices=METHODS, help="logit (default: the label's next-token probability), or "
                   "generate and extract: box (\\boxed{X}), pattern ('Answer: X' and what models write), regex; "
                   "cloze: each option's text scored as a continuation (lm-eval's acc, acc_norm; no letters); "
                   "logit+cloze: both on the same questions, with the gap between them; logit+box|pattern|regex: "
                   "every prompt scored by letters and answered in writing, with how often the letters agree")
    g.add_argument("--answer-regex", metavar="REGEX",
                   help="method regex (or logit+regex): one capturing group around the letter")
    g.add_argument("--system-prompt", help="system message (YAML: a string, or one per --prompt-lang)")
    g.add_argument("--thinking", choices=THINKING, help="enable_thinking for templates that read it (default "
                   "auto: the template's own default)")
    g.add_argument("--max-new-tokens", type=int, help="most tokens generated per answer (default 2048)")
    g.add_argument("--temperature", type=float, help="0 (default): greedy")
    g.add_argument("--top-p", type=float, help="nucleus sampling threshold (default 1)")
    g.add_argument("--samples", type=int, metavar="N", help="answers drawn per prompt (with --temperature): "
                   "reports mean, majority-vote and pass@k accuracy (default 1)")
    p.add_argument("--twinkle-results", action="store_true", default=None,
                   help="also write Twinkle Eval's result files into OUTPUT_DIR/results/ (the default when "
                        "--config is a Twinkle Eval config)")
    p.add_argument("--no-twinkle-results", dest="twinkle_results", action="store_false")
    p.add_argument("--prompt-style", choices=PROMPT_STYLES, help="lm-eval (default): lm-evaluation-harness's "
                   "prompts; twinkle (the default for a Twinkle Eval config): the prompts Twinkle Eval 2.10 sends")
    g.add_argument("--extractor", choices=EXTRACTORS, help="twinkle_hf (default): this project's letter reading; "
                   "twinkle: Twinkle Eval's pattern/box/custom_regex reading, to reproduce its numbers")
    p.add_argument("--report-to", metavar="TRACKERS",
                   help="log the finished run to experiment trackers, comma-separated: mlflow, wandb, tensorboard, "
                        "trackio (transformers' names; each an optional install; default none)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted run in --output-dir "
                   "(same settings required)")
    p.add_argument("--shard", metavar="K/N|auto", help="score only share K of an N-way split of the rows (whole "
                   "prefix groups, as N data-parallel processes would), into --output-dir with a shard.json; "
                   "auto: K and N from a Slurm array or a Kubernetes Indexed Job; join the N with twinkle-hf merge")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true", help="load the tokenizer and data only (no weights) and "
                   "print what would run: prompts, tokens before and after prefix sharing, an example prompt, "
                   "a time estimate")
    return p


def conflicting_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> None:
    """Two flags that set one setting opposite ways (``--apply-chat-template --no-chat-template``)
    are a usage error, not "the last one wins"."""
    typed = {arg.split("=", 1)[0] for arg in argv if arg.startswith("--")}
    by_dest: dict[str, list[str]] = {}
    for action in parser._actions:
        flags = [flag for flag in action.option_strings if flag in typed]
        if flags:
            by_dest.setdefault(action.dest, []).append(flags[0])
    for flags in by_dest.values():
        if len(flags) > 1:
            raise TwinkleError(f"{' and '.join(flags)} contradict each other: give one of them")


def typed_flags(parser: argparse.ArgumentParser, argv: Sequence[str]) -> dict[str, str]:
    """{setting: the flag the user typed for it} (``--num-fewshot`` for ``num_fewshot``)."""
    typed = {arg.split("=", 1)[0] for arg in argv if arg.startswith("-")}
    return {action.dest: flag for action in parser._actions for flag in action.option_strings if flag in typed}


def name_the_setting(message: str, flags: Mapping[str, str], yaml_keys: Collection[str], config: str | None) -> str:
    """A settings error, its key (``num_fewshot must be ...``) said as the user wrote it.

    That is the flag they typed, or the key in their YAML file; a flag wins over the file, so it is
    named first."""
    key, sep, rest = message.partition(" ")
    if not sep:
        return message
    if key in flags:
        return f"{flags[key]} {rest}"
    if key in yaml_keys and config:
        return f"{key} (in {config}) {rest}"
    return message
