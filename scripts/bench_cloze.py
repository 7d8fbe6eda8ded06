"""bench.py's cloze workload (C1): twinkle's `--method cloze` against lm-eval's `HFLM.loglikelihood`
on the same requests, one per (question, option text), as lm-eval's arc_challenge asks them.

Twinkle runs its whole `evaluate` (prompts, tokens, scoring with each question run once as the
shared prefix of its options). lm-eval gets exactly twinkle's (context, " " + option) pairs and
scores them with its default batching. Its `acc` and `acc_norm` picks (np.argmax of the
log-likelihoods, and of them divided by the option's characters) are compared with twinkle's.
lm-eval's `_encode_pair` token ids are compared with twinkle's, request by request.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from bench_summary import compare_predictions, is_contended, is_starved, side_summary


def cloze_requests(tokenizer: Any, data: Any, cfg: Any) -> tuple[list[tuple[str, str]], list[int], Any]:
    """lm-eval's requests for twinkle's cloze prompts (untimed): (context, continuation) per option,
    question-major; each question's option count; and twinkle's prepared cloze prompts."""
    from twinkle_hf.prompts.cloze import prepare_cloze

    prep = prepare_cloze(tokenizer, data[0], cfg, None)
    template_delimiter = " "  # the default template's and ARC's target_delimiter
    choices = prep.rows["choices"][:]
    pairs = [(ctx, template_delimiter + text) for ctx, texts in zip(prep.contexts, choices) for text in texts]
    return pairs, [len(c) for c in choices], prep


def instances(pairs: list[tuple[str, str]]) -> list[Any]:
    from lm_eval.api.instance import Instance

    return [Instance(request_type="loglikelihood", doc={}, arguments=pair, idx=0, doc_id=i)
            for i, pair in enumerate(pairs)]


def run_cloze(w: Any, cfg: Any, model: Any, tokenizer: Any, lm: Any, data: Any, repeats: int,
              alternate: Callable[..., Any]) -> dict[str, Any]:
    """Twinkle's cloze run, then lm-eval's loglikelihood on the same requests, ``repeats`` times."""
    from twinkle_hf.evaluation import evaluate

    pairs, ks, prep = cloze_requests(tokenizer, data, cfg)

    def lm_side(_: Any) -> Callable[[], Any]:
        requests = instances(pairs)
        return lambda: lm.loglikelihood(requests, disable_tqdm=True)

    result, out, tw_runs, lm_runs = alternate(w, model, repeats,
                                              lambda: evaluate(model, tokenizer, data, cfg, progress=False), lm_side)
    ends = np.cumsum(ks)
    lm_ll = [np.array([ll for ll, _ in out[e - k:e]]) for e, k in zip(ends, ks)]
    lm_ids = [ctx + cont for ctx, cont in (lm._encode_pair(c, t) for c, t in pairs)]
    tw_ids = [list(t) + [g[-1]] for t, g in zip(prep.token_ids, prep.targets)]
    return {"result": result, "lm_ll": lm_ll, "choices": prep.rows["choices"][:], "tokens_identical": lm_ids == tw_ids,
            "real_tokens": sum(len(t) for t in prep.token_ids), "tw_runs": tw_runs, "lm_runs": lm_runs}


def _softmax(x: np.ndarray) -> np.ndarray:
    q = np.exp(x - x.max())
    return q / q.sum()


def summarize_cloze(w: Any, raw: dict[str, Any], params: int, peak: float, threads: int | None) -> dict[str, Any]:
    """The reported row: the fastest run of each side; acc and acc_norm picks compared per question."""
    result, preds = raw["result"], raw["result"].predictions
    questions, prompts = result.timing["questions"], result.timing["prompts"]
    tw = min(raw["tw_runs"], key=lambda r: r["seconds"])
    lm = min(raw["lm_runs"], key=lambda r: r["seconds"])
    chars = [np.array([float(len(c)) for c in texts]) for texts in raw["choices"]]
    twinkle = side_summary(tw, questions, raw["real_tokens"], params, peak, prompts)
    twinkle["own_padded_tokens"] = result.timing["padded_tokens"]
    return {"workload": w.name, "title": w.title, "kind": "score", "questions": questions, "prompts": prompts,
            "ratio": lm["seconds"] / tw["seconds"], "twinkle": twinkle,
            "lm_eval": side_summary(lm, questions, raw["real_tokens"], params, peak, prompts),
            "starved": is_starved([tw, lm], threads) or (threads is not None and is_contended([tw, lm])),
            "token_ids_identical": raw["tokens_identical"],
            "agreement": compare_predictions([_softmax(ll) for ll in preds.cloze.loglik], raw["lm_ll"]),
            "agreement_acc_norm": compare_predictions([_softmax(ll / c) for ll, c in zip(preds.cloze.loglik, chars)],
                                                      [ll / c for ll, c in zip(raw["lm_ll"], chars)]),
            "all_seconds": {"twinkle": [r["seconds"] for r in raw["tw_runs"]],
                            "lm_eval": [r["seconds"] for r in raw["lm_runs"]]}}


def warm_up_cloze(model: Any, tokenizer: Any, lm: Any, data: Any, cfg: Any) -> None:
    """One-time costs of both sides in cloze mode: one question per subject each."""
    import dataclasses

    from twinkle_hf.evaluation import evaluate

    tiny = dataclasses.replace(cfg, limit=1)
    evaluate(model, tokenizer, data, tiny, progress=False)
    lm.loglikelihood(instances(cloze_requests(tokenizer, data, tiny)[0]), disable_tqdm=True)
