"""Throughput of twinkle_hf against lm-evaluation-harness's `HFLM.loglikelihood` (letter scoring)
and `HFLM.generate_until` (generation mode), head to head.

    pip install lm-eval                        # once; it leaves an installed torch/transformers alone
    python scripts/bench.py                    # SmolLM2-135M from ../shared, every workload
    python scripts/bench.py --workloads W1,W2 --questions 4   # a quick look
    python scripts/bench.py --workloads G1     # generation only
    python scripts/bench.py --full             # 12 subjects, more questions (meant for a GPU)
    python scripts/bench.py --model HuggingFaceTB/SmolLM2-360M --device cuda --dtype bfloat16
    python scripts/bench.py --repeats 3 --out bench.json

One process, one loaded model object, one tokenizer, dtype and device for both sides. Per workload,
twinkle runs `evaluate` (with `log_prompts`), then lm-eval runs on exactly those prompt strings.

W1-W5 (letter scoring): one `loglikelihood` request per (prompt, " A" / " B" / ...), with its
default logits cache, so it too runs one forward pass per prompt. Its prediction is the argmax of
the letters' log-likelihoods.

G1 (generation): twinkle's method box on the chat-templated prompt, greedy, at most 48 new tokens.
Each side runs 16 prompts a batch on the CPU, and its own pick on a GPU (lm-eval 64, twinkle auto;
`--gen-batch-size` sets both). lm-eval's `generate_until` gets each prompt with the same limits, and
`until` = twinkle's stop tokens as text (the eos ids of the tokenizer and generation_config). It
feeds the same token ids, checked prompt by prompt. Their texts are compared after .strip(), and
twinkle's extraction reads a letter from both.

C1 (cloze, `python scripts/bench.py --workloads C1`): twinkle's `--method cloze` against lm-eval's
`loglikelihood` on the same (context, " " + option) requests. The acc and acc_norm picks are
compared question by question (scripts/bench_cloze.py).

The two alternate `--repeats` times (default 1) and the fastest run of each side counts, since other
load only ever slows a run down. Each CPU run first waits for a quiet second, and one that other
processes shared is flagged: its ratio is then noise. Twinkle's seconds cover its whole `evaluate`
(permute, build prompts, tokenize, score or generate and extract). lm-eval's cover `loglikelihood` /
`generate_until` on the ready strings (tokenize, score or generate, decode). A tiny warm-up of each
side (and mode) runs first.

It prints a markdown table per mode, and for letter scoring a second one: forward passes, median
tokens per pass, padding, and host seconds per 1000 prompts outside the forward. That table also
gives the seconds an H200 running the 7B shape would take, from the passes and tokens (the fit in
docs/performance.md). It writes `--out` (bench.json) with every number, the machine, the versions
and each workload's exact config.

The targets are in docs/design.md ("Performance"); the last runs are in docs/performance.md. The
few-shot gain depends on how many questions share a few-shot block (one per subject and order). The
default takes 10 questions per subject in W2/W3, where a real MMLU subject has 100 or more, and
`--questions 2` shows the small-sharing end. G1's gain on a CPU is mostly in prefill: a question's
orders share their prompt's start, and the chat header runs once per segment of questions. Rows also
leave as they finish. Continuous batching (waiting prompts take the free slots) saves decode steps,
which matters most on a GPU, where a step costs about the same for 4 rows as for 64.

The code: the workloads and their inputs are in bench_workloads.py, the timed runs in bench_runs.py,
the measuring in bench_measure.py, and the rows, notes and tables in bench_report.py and
bench_summary.py.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "scripts")]  # run from a clone without installing

from bench_cloze import run_cloze, summarize_cloze, warm_up_cloze  # noqa: E402
from bench_measure import machine, matmul_peak_flops  # noqa: E402
from bench_report import make_notes, summarize_generation, summarize_workload  # noqa: E402
from bench_runs import alternate, generation_hflm, load_both, run_generation, run_workload, warm_up  # noqa: E402
from bench_summary import TIE_TOL, format_generation_table, format_pass_table, format_table  # noqa: E402
from bench_workloads import (  # noqa: E402
    CACHE_DIR,
    FULL_SUBJECTS,
    GEN_BATCH,
    GEN_NEW_TOKENS,
    GGUF,
    GPU_GEN_BATCH,
    MMLU_DIR,
    SUBJECTS,
    WORKLOADS,
    cached_model,
    display,
    gen_batches,
    workload_config,
    write_subset,
)

from twinkle_hf.settings.config import DTYPES  # noqa: E402


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", help="local directory or hub id (default: SmolLM2-135M GGUF from ../shared)")
    p.add_argument("--mmlu-dir", type=Path, help="original MMLU: dev/ and test/ with <subject>_<split>.csv")
    p.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N or mps")
    p.add_argument("--dtype", default="auto", choices=DTYPES)
    p.add_argument("--workloads", default=",".join(w.name for w in WORKLOADS),
                   help=f"comma-separated, from {', '.join(w.name for w in WORKLOADS)} (default: all); "
                        f"W*: letter scoring vs loglikelihood, G1: generation (method box, chat template, greedy, "
                        f"{GEN_NEW_TOKENS} new tokens) vs generate_until; C1: --method cloze vs loglikelihood on the "
                        f"option texts")
    p.add_argument("--questions", type=int, help="questions per subject in every workload")
    p.add_argument("--full", action="store_true", help="more subjects and questions")
    p.add_argument("--repeats", type=int, default=1, help="alternating runs per workload; the fastest counts")
    p.add_argument("--lm-eval-batch-size", help="HFLM batch_size for letter scoring: an integer or auto (default 16 on "
                   "CPU, else 64)")
    p.add_argument("--gen-batch-size", default="auto",
                   help=f"generation (G1): prompts a batch on both sides, or auto: {GEN_BATCH} on both on the CPU, "
                        f"else each side's own pick on a GPU (lm-eval {GPU_GEN_BATCH['lm_eval']}, twinkle auto)")
    p.add_argument("--out", type=Path, default=Path("bench.json"))
    args = p.parse_args(argv)
    if (args.questions is not None and args.questions < 1) or args.repeats < 1:
        p.error("--questions and --repeats must be at least 1")
    if args.gen_batch_size != "auto" and not (args.gen_batch_size.isdigit() and int(args.gen_batch_size) > 0):
        p.error(f"--gen-batch-size must be auto or a positive integer, got {args.gen_batch_size!r}")
    known = {w.name: w for w in WORKLOADS}
    names = [n.strip().upper() for n in args.workloads.split(",") if n.strip()]
    unknown = [n for n in names if n not in known]
    if unknown or not names:
        p.error(f"--workloads: unknown {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}")
    args.workloads = [known[n] for n in dict.fromkeys(names)]
    if args.model is None and not GGUF.is_file():
        p.error(f"the default model {display(GGUF)} is absent (no ../shared next to the repo); pass --model")
    args.mmlu_dir = args.mmlu_dir or MMLU_DIR
    if not (args.mmlu_dir / "test").is_dir():
        p.error(f"no MMLU at {display(args.mmlu_dir)}; pass --mmlu-dir DIR (dev/, test/ with <subject>_<split>.csv)")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import datasets
    import transformers

    from twinkle_hf.data.sources import load_datasets

    datasets.disable_progress_bar()
    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    logging.getLogger("lm_eval").setLevel(logging.ERROR)
    started = time.perf_counter()
    model_path = args.model or str(cached_model())
    label = args.model or f"{display(GGUF)} (as {display(CACHE_DIR)})"
    subjects = FULL_SUBJECTS if args.full else SUBJECTS
    model, info, tokenizer, lm = load_both(args, model_path)
    args.device_type = model.device.type  # generation's batch per side (gen_batches) depends on it
    host = machine(model.device)
    params = info.parameters - model.get_input_embeddings().weight.numel()  # a lookup is not a matmul
    peaks = [matmul_peak_flops(model.dtype, model.device)]
    raws, configs, lm_gen, warmed = [], {}, None, set()
    with tempfile.TemporaryDirectory(prefix="twinkle-bench-") as tmp:
        data_dir = write_subset(args.mmlu_dir, subjects, Path(tmp) / "mmlu")
        data = load_datasets(workload_config(WORKLOADS[0], model_path, data_dir, 1, args))
        for w in args.workloads:
            cfg = workload_config(w, model_path, data_dir, args.questions or (
                w.full_questions if args.full else w.questions), args)
            if w.generates and lm_gen is None:
                lm_gen = generation_hflm(model, tokenizer, cfg, gen_batches(args)["lm_eval"])
            mode = "cloze" if w.method == "cloze" else w.generates
            if mode not in warmed:  # once per mode
                if mode == "cloze":
                    warm_up_cloze(model, tokenizer, lm, data, cfg)
                else:
                    warm_up(w, model, tokenizer, lm_gen if w.generates else lm, data, cfg)
                warmed.add(mode)
            peaks.append(matmul_peak_flops(model.dtype, model.device))  # other load depresses some
            if mode == "cloze":
                raws.append(run_cloze(w, cfg, model, tokenizer, lm, data, args.repeats, alternate))
                configs[w.name] = {**cfg.to_dict(), "model": label, "datasets": [f"MMLU: {', '.join(subjects)}"]}
                continue
            run = run_generation if w.generates else run_workload
            raws.append(run(w, cfg, model, tokenizer, lm_gen if w.generates else lm, data, args.repeats))
            configs[w.name] = {**cfg.to_dict(), "model": label, "datasets": [f"MMLU: {', '.join(subjects)}"]}
    peaks.append(matmul_peak_flops(model.dtype, model.device))
    threads = host["torch_threads"] if model.device.type == "cpu" else None
    rows = [(summarize_cloze if w.method == "cloze" else summarize_generation if w.generates else summarize_workload)(
        w, raw, params, max(peaks), threads) for w, raw in zip(args.workloads, raws)]
    host["load_average_at_end"] = os.getloadavg()
    adds_bos = tokenizer("x")["input_ids"] != tokenizer("x", add_special_tokens=False)["input_ids"]
    notes = make_notes(rows, host, label, info, lm, params, max(peaks), adds_bos, args.repeats)
    total = time.perf_counter() - started
    tables = [format_table([r for r in rows if r.get("kind") != "generate"]),
              format_pass_table([r for r in rows if r.get("kind") != "generate"]),
              format_generation_table([r for r in rows if r.get("kind") == "generate"])]
    print("\n\n".join(t for t in tables if t.count("\n") > 1) + "\n\n" + "\n".join(f"- {n}" for n in notes)
          + f"\n- total {total:.0f} s")
    report = {"format_version": 1, "machine": host, "model": {**vars(info), "name_or_path": label},
              "dtype": info.dtype, "mfu_parameters": params, "matmul_peak_flops": peaks,
              "lm_eval": {"batch_size": lm.batch_size, "add_bos_token": True, "logits_cache": True,
                          **({"generate_batch_size": lm_gen.batch_size, "generate_add_bos_token": lm_gen.add_bos_token}
                             if lm_gen is not None else {})},
              "tokenizer_adds_bos": adds_bos, "repeats": args.repeats, "repeat_policy": "fastest",
              "tie_tolerance": TIE_TOL, "subjects": list(subjects), "workloads": rows, "configs": configs,
              "total_seconds": total, "notes": notes}
    args.out.write_text(json.dumps(report, indent=1, default=float) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
