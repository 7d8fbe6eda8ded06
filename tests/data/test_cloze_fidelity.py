"""--method cloze on a named benchmark asks and picks exactly as lm-evaluation-harness's own task.

ARC-Challenge and HellaSwag: local copies (the Hub's parquet snapshot layout) with awkward rows (ARC:
labels "1".."4", 3 to 5 options, surrounding whitespace, accents; HellaSwag: WikiHow's [title] and
[step] artifacts, double spaces, a lower-case ctx_b, an empty ctx_b); lm-eval 0.4.13's installed
``arc_challenge`` and ``hellaswag`` tasks (YAML and utils.process_docs) read the same files. Every
context and continuation is compared byte for byte with lm-eval's requests, and a model's ``acc``
and ``acc_norm`` picks (twinkle_hf's cloze scorer) with those lm-eval computes from
``HFLM.loglikelihood``, question by question: a tiny random model, and the real SmolLM2-135M (slow).
Zero-shot: lm-eval draws these tasks' few-shot examples at random.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import SMOLLM_GGUF, make_model, make_tokenizer, save_model_dir
from test_benchmark_fidelity import lm_eval_task

from twinkle_hf.data.catalog import load_named
from twinkle_hf.prompts.cloze import prepare_cloze
from twinkle_hf.settings.config import EvalConfig

pytest.importorskip("lm_eval", reason="lm-eval is not installed: pip install lm-eval==0.4.13 (.ci/run installs it)")

QUESTIONS = [
    ("Which gas do plants take in?  ", ["oxygen", "carbon dioxide", "nitrogen", "helium"], ["A", "B", "C", "D"], "B"),
    (" Water boils at what temperature at sea level?", ["100 °C", "50 °C", "0 °C"], ["1", "2", "3"], "1"),
    ("Which is a mammal?", ["whale", "shark", "trout", "frog", "eel"], ["A", "B", "C", "D", "E"], "A"),
    ("A café sells 3 cakes. Which unit measures mass?", ["kilogram", "metre", "second", "ampère"],
     ["1", "2", "3", "4"], "1"),
    ("What do bees make?\n", ["honey", "the honey of flowers", "wax", "silk"], ["A", "B", "C", "D"], "A"),
    ("Which planet is closest to the Sun?", ["Mercury", "Venus", "Earth", "Mars"], ["A", "B", "C", "D"], "A"),
]


def write_arc(root: Path) -> dict[str, str]:
    """ARC-Challenge as the Hub's parquet snapshot lays it out: test and train files of one config."""
    import datasets

    folder = root / "ARC-Challenge"
    folder.mkdir(parents=True)
    files = {}
    for split, rows in (("test", QUESTIONS), ("train", QUESTIONS[::-1])):
        table = {"id": [f"{split}-{i}" for i in range(len(rows))], "question": [q for q, *_ in rows],
                 "choices": [{"text": t, "label": labels} for _, t, labels, _ in rows],
                 "answerKey": [key for *_, key in rows]}
        path = folder / f"{split}-00000-of-00001.parquet"
        datasets.Dataset.from_dict(table).to_parquet(str(path))
        files[split] = str(path)
    return files


def lm_eval_picks(lm: Any, task: Any) -> tuple[list[tuple[str, list[str]]], list[int], list[int], list[int]]:
    """lm-eval's requests (context, continuations) per document, its gold index, and its acc and
    acc_norm picks (np.argmax of the log-likelihoods, of them divided by len(choice))."""
    from lm_eval.api.instance import Instance

    requests, gold, acc, norm = [], [], [], []
    for i, doc in enumerate(task.eval_docs):
        ctx, choices = task.fewshot_context(doc, 0), task.doc_to_choice(doc)
        conts = [task.config.target_delimiter + c for c in choices]
        asked = [Instance(request_type="loglikelihood", doc=doc, arguments=(ctx, c), idx=j, doc_id=i)
                 for j, c in enumerate(conts)]
        lls = np.array([ll for ll, _ in lm.loglikelihood(asked, disable_tqdm=True)])
        requests.append((ctx, conts))
        gold.append(task.doc_to_target(doc))
        acc.append(int(np.argmax(lls)))
        norm.append(int(np.argmax(lls / np.array([float(len(c)) for c in choices]))))
    return requests, gold, acc, norm


HELLASWAG = [
    ("Removing ice from car", "Then, the man writes over the snow covering the window of a car, and a woman",
     "wearing winter clothes smiles.", [", the man adds wax to the windshield and cuts it.",
                                        ", a person board a ski lift, while two men supporting the head of the person.",
                                        ", the man puts on a christmas coat, knitted with netting.",
                                        ", the man continues removing the snow on his car."], "3"),
    ("Making a cake", "[header] How to bake a cake [title] Preheat the oven.  [step] Set it to 350 degrees.", "",
     ["[substeps] Grease the pan  well.", "[title] Mix the flour. [step] Add sugar.", "Eat it all.", "Wait."], "1"),
    ("Baking cookies", "A female chef in white uniform shows a stack of baking pans in a large kitchen",
     "presenting them. the pans", ["contain egg yolks and baking soda.", "are then sprinkled with brown sugar.",
                                   "are placed in a strainer on the counter.", "are filled with pastries."], "3"),
    ("Café", "A man sits at a café table.", "he orders a crème brûlée.",
     ["It arrives quickly.", "The waiter leaves.", "He pays  the bill.", "Nothing happens."], "0"),
]


def write_hellaswag(root: Path) -> dict[str, str]:
    """HellaSwag as the Hub's parquet snapshot lays it out (data/<split>-00000-of-00001.parquet)."""
    import datasets

    folder = root / "data"
    folder.mkdir(parents=True)
    files = {}
    for split, rows, start in (("validation", HELLASWAG, 0), ("train", HELLASWAG[::-1], 100)):
        table = {"ind": [start + i for i in range(len(rows))], "activity_label": [r[0] for r in rows],
                 "ctx_a": [r[1] for r in rows], "ctx_b": [r[2] for r in rows],
                 "ctx": [r[1] + " " + r[2] for r in rows], "endings": [r[3] for r in rows],
                 "source_id": ["x"] * len(rows), "split": [split] * len(rows), "split_type": ["indomain"] * len(rows),
                 "label": [r[4] for r in rows]}
        path = folder / f"{split}-00000-of-00001.parquet"
        datasets.Dataset.from_dict(table).to_parquet(str(path))
        files[split] = str(path)
    return files


CASES = {"arc_challenge": (write_arc, "arc"), "hellaswag": (write_hellaswag, "hellaswag")}


def _compare(name: str, model: Any, tokenizer: Any, tmp_path: Path) -> None:
    """lm-eval's task ``name`` and --benchmark ``name`` --method cloze on the same files and model."""
    from lm_eval.models.huggingface import HFLM

    from twinkle_hf.evaluation import evaluate

    write, folder = CASES[name]
    files = write(tmp_path / folder)
    task = lm_eval_task(name, "parquet", files)
    requests, gold, acc, norm = lm_eval_picks(HFLM(pretrained=model, tokenizer=tokenizer, batch_size=4), task)
    data = load_named(f"{name}={tmp_path / folder}")
    cfg = EvalConfig(method="cloze", bootstrap=0)
    prep = prepare_cloze(tokenizer, data, cfg, None)
    ours = [(ctx, [" " + c for c in choices]) for ctx, choices in zip(prep.contexts, prep.rows["choices"][:])]
    assert ours == requests, name  # every context and continuation, byte for byte
    preds = evaluate(model, tokenizer, [data], cfg, progress=False).predictions
    assert preds.answer.tolist() == gold, name
    assert preds.pred.tolist() == acc, name  # acc, question by question
    assert preds.cloze is not None and preds.cloze.pred_norm.tolist() == norm, name  # acc_norm


@pytest.mark.parametrize("name", list(CASES))
def test_cloze_matches_lm_eval_on_a_tiny_model(name, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    texts = [q for q, *_ in QUESTIONS] + [" ".join(r[1:3]) + " " + " ".join(r[3]) for r in HELLASWAG]
    tokenizer = make_tokenizer(tuple(texts))
    folder = save_model_dir(tmp_path / "model", tokenizer, make_model(tokenizer, seed=5))
    _compare(name, AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval(), tokenizer, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_cloze_matches_lm_eval_on_smollm2(name, tmp_path):
    if not SMOLLM_GGUF.is_file():
        pytest.skip(f"real model not found: {SMOLLM_GGUF} (see the README's Test section)")
    pytest.importorskip("gguf", reason="the GGUF needs pip install gguf (.[gguf])")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, file = str(SMOLLM_GGUF.parent), SMOLLM_GGUF.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=file, dtype=torch.float32).eval()
    _compare(name, model, tokenizer, tmp_path)
