"""Cloze scoring (--method cloze) equals a plain computation: every option's context + continuation
run in full, alone, its continuation's log-probabilities summed; shared prefixes, batches and
left padding change nothing (float32, CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import make_model

from twinkle_hf.data.load import load_benchmark
from twinkle_hf.engine.scoring import Continuations, ScoreSettings, score_prompts
from twinkle_hf.metrics.cloze_picks import cloze_picks
from twinkle_hf.prompts.cloze import encode_pairs, prepare_cloze
from twinkle_hf.settings.config import EvalConfig


@pytest.fixture(scope="module")
def cloze_csv(tmp_path_factory) -> Path:
    """Options that share their first words (so a shared prefix could reach into them), options of
    different lengths, 3 to 5 options, a question ending in a space."""
    path = tmp_path_factory.mktemp("cloze") / "cloze.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(9):
            k = 3 + i % 3
            options = [f"the answer is {'whale' * (j + 1)}" if j % 2 or i % 3 == 0 else f"option {j} of question {i}"
                       for j in range(k)]  # every third question: all options start alike
            question = f"Question {i}: which of these is a mammal that lives in the sea, and why?" + " " * (i % 2)
            fh.write(json.dumps({"question": question, "subject": "sea", "choices": options, "answer": i % k}) + "\n")
    return path


def _reference(model, tokenizer, contexts: list[str], choices: list[list[str]]) -> list[np.ndarray]:
    """lm-eval's request, computed plainly: per option, encode(context) and encode(context + " " +
    text) (trailing spaces of the context moved onto the continuation), one full forward of
    context + continuation without its last token, batch 1, the continuation's log-probs summed."""
    out = []
    for context, texts in zip(contexts, choices):
        sums = []
        for text in texts:
            continuation = " " + text
            spaces = len(context) - len(context.rstrip())
            ctx, cont = (context[:-spaces], context[-spaces:] + continuation) if spaces else (context, continuation)
            ctx_ids = tokenizer(ctx)["input_ids"]
            cont_ids = tokenizer(ctx + cont)["input_ids"][len(ctx_ids):]
            ids = torch.tensor([ctx_ids + cont_ids[:-1]])
            with torch.no_grad():
                logp = torch.log_softmax(model(input_ids=ids).logits[0, -len(cont_ids):].float(), dim=-1)
            sums.append(float(logp.gather(1, torch.tensor(cont_ids).unsqueeze(1)).sum()))
        out.append(np.array(sums))
    return out


@pytest.mark.parametrize("batch_size", ["auto", 1, 5])
@pytest.mark.parametrize("share", [True, False])
def test_cloze_scores_equal_a_plain_forward_per_option(tiny_tokenizer, cloze_csv, batch_size, share):
    model = make_model(tiny_tokenizer, seed=7)
    data = load_benchmark(str(cloze_csv))
    cfg = EvalConfig(method="cloze", share_prefix=share, batch_size=batch_size)
    prep = prepare_cloze(tiny_tokenizer, data, cfg, None)
    out = score_prompts(model, Continuations(prep.token_ids, prep.targets, prep.groups),
                        ScoreSettings(batch_size, tiny_tokenizer.eos_token_id, progress=False))
    got: list[list[float]] = [[] for _ in prep.contexts]
    for q, logp in zip(prep.question, out.token_logp):
        got[q].append(float(np.sum(logp)))
    choices = prep.rows["choices"][:]
    want = _reference(model, tiny_tokenizer, prep.contexts, choices)
    assert len(want) == 9 and sum(len(c) for c in choices) == len(prep.token_ids) == 36
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-4)
    picks = cloze_picks([np.array(g) for g in got], choices)
    assert [p.tolist() for p in picks] == [p.tolist() for p in cloze_picks(want, choices)]
    assert (out.stats.shared_prefixes > 0) == share  # each question's context ran once for its options
    if share:
        assert out.stats.computed_tokens < out.stats.tokens
    if share and batch_size == "auto":  # 36 continuations of a few tokens each: 2 passes (a 5% padding cap ran 4)
        assert out.stats.batches <= 2


def test_encode_pairs_moves_trailing_spaces_onto_the_continuation(tiny_tokenizer):
    ctx, conts = encode_pairs(tiny_tokenizer, ["Answer: ", "Answer:"], [[" B", "C"], [" B"]], special=True)
    enc = lambda text: tiny_tokenizer(text)["input_ids"]
    assert ctx[0] == enc("Answer:") == ctx[1]
    assert conts[0][0] == enc("Answer:  B")[len(enc("Answer:")):]  # "Answer:" + " " + " B"
    assert conts[0][1] == enc("Answer: C")[len(enc("Answer:")):]
    assert conts[1][0] == enc("Answer: B")[len(enc("Answer:")):]


def test_cloze_picks_follow_lm_eval():
    # acc: the largest sum (a tie: the first, as np.argmax); acc_norm: per character of the option text;
    # acc_bytes: per UTF-8 byte ("é" is 2 bytes, 1 character)
    ll = [np.array([-4.0, -6.0, -4.0]), np.array([-3.0, -3.3])]
    choices = [["ab", "abcdef", "xy"], ["ééé", "abcd"]]
    acc, norm, size = cloze_picks(ll, choices)
    assert acc.tolist() == [0, 0]  # -4 twice: the first; -3.0 > -3.3
    assert norm.tolist() == [1, 1]  # -6/6 = -1 > -4/2; -3.0/3 = -1.0 < -3.3/4 = -0.825
    assert size.tolist() == [1, 0]  # -3.0/6 bytes = -0.5 > -3.3/4 = -0.825


def test_partial_scoring_has_acc_alone():
    # Winogrande: both options score the same continuation; "Rebecca" is longer than "Sarah", so a
    # per-character pick would take it at -10.3 against -10: there is none, acc picks Sarah
    acc, norm, size = cloze_picks([np.array([-10.0, -10.3])], [["Sarah", "Rebecca"]], partial=True)
    assert acc.tolist() == [0] and norm.tolist() == [-1] and size.tolist() == [-1]
    assert cloze_picks([np.array([-10.0, -10.3])], [["Sarah", "Rebecca"]])[1].tolist() == [1]  # the artefact
