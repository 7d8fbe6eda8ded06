"""Fingerprints of weights and data: what changes them and what does not (resume: test_resume.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import struct
from pathlib import Path

import pytest
from helpers import make_model, save_model_dir

from twinkle_hf.data.fingerprint import (
    SAMPLE_BYTES,
    SAMPLES,
    data_fingerprint,
    dataset_fingerprint,
    folder_fingerprint,
    weight_digest,
)
from twinkle_hf.data.load import load_benchmark
from twinkle_hf.models.loading import load_model
from twinkle_hf.settings.config import EvalConfig


def _same_times(path: Path, like: Path) -> None:
    stat = like.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def test_new_values_in_the_same_layout_change_the_fingerprint(tmp_path, tiny_tokenizer, tiny_model_dir):
    """Same file names, sizes, header and mtime: only the sampled content tells them apart."""
    copy = shutil.copytree(tiny_model_dir, tmp_path / "copy")  # copy2 keeps the times
    assert folder_fingerprint(copy) == folder_fingerprint(tiny_model_dir)
    retrained = save_model_dir(tmp_path / "retrained", tiny_tokenizer, make_model(tiny_tokenizer, seed=1))
    a, b = tiny_model_dir / "model.safetensors", retrained / "model.safetensors"
    _same_times(b, a)
    assert a.stat().st_size == b.stat().st_size
    assert weight_digest(a) != weight_digest(b)
    os.utime(copy / "model.safetensors", ns=(0, 10**18))  # rewritten, same bytes: refused, not trusted
    assert folder_fingerprint(copy) != folder_fingerprint(tiny_model_dir)


def _safetensors_like(folder: Path, header: dict, body: bytes) -> Path:
    raw = json.dumps(header).encode()
    folder.mkdir()
    path = folder / "model.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + body)
    return path


def test_a_large_file_is_sampled_header_and_all(tmp_path):
    """Past the sample budget only windows are read: a byte in the last window counts, and so does
    the safetensors header (another dtype at the same size)."""
    body = bytes(SAMPLES * SAMPLE_BYTES * 4)
    header = {"w": {"dtype": "F32", "shape": [len(body) // 4], "data_offsets": [0, len(body)]}}
    base = _safetensors_like(tmp_path / "base", header, body)
    last_byte = bytearray(body)
    last_byte[-1] = 1
    changes = {"last byte": (header, bytes(last_byte)), "dtype": ({"w": {**header["w"], "dtype": "I32"}}, body)}
    for name, (other_header, other_body) in changes.items():
        path = _safetensors_like(tmp_path / name, other_header, other_body)
        _same_times(path, base)
        assert path.stat().st_size == base.stat().st_size
        assert weight_digest(path) != weight_digest(base), name


def test_data_fingerprint_sees_one_answer_in_either_split(tmp_path, mmlu_dir):
    copy = shutil.copytree(mmlu_dir, tmp_path / "mmlu")
    first = data_fingerprint([load_benchmark(str(copy))])
    assert data_fingerprint([load_benchmark(str(copy))]) == first  # deterministic
    for split in ("test", "dev"):  # the evaluated rows and the few-shot pool
        path = copy / split / f"anatomy_{split}.csv"
        text = path.read_text(encoding="utf-8")
        assert text.rstrip().endswith(",C")
        path.write_text(text.rstrip()[:-1] + "D\n", encoding="utf-8")
        assert data_fingerprint([load_benchmark(str(copy))]) != first, split
        path.write_text(text, encoding="utf-8")
    assert data_fingerprint([load_benchmark(str(copy))]) == first


def test_dataset_fingerprint_is_the_hash_of_its_rows_one_by_one(mmlu_dir):
    """Columns are read whole for speed; the hash stays the one of each row's canonical fields in turn
    (so a run started by an earlier version still resumes)."""
    import hashlib

    item = load_benchmark(str(mmlu_dir))
    digest = hashlib.sha256(json.dumps(["dataset", item.name]).encode() + b"\n")
    for split, table in (("rows", item.rows), ("fewshot", item.fewshot)):
        digest.update(json.dumps([split, len(table)]).encode() + b"\n")
        for row in table:  # row by row, as datasets yields them
            fields = [row[c] for c in ("id", "subject", "question", "choices", "answer")]
            digest.update(json.dumps(fields, ensure_ascii=False).encode() + b"\n")
    assert dataset_fingerprint(item.name, item.rows, item.fewshot) == digest.hexdigest()
    assert item.fingerprint == digest.hexdigest()


@pytest.mark.skipif(importlib.util.find_spec("peft") is None, reason="needs `pip install peft`")
def test_an_adapter_fingerprint_covers_its_base_model(tmp_path, tiny_tokenizer, tiny_model_dir):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = shutil.copytree(tiny_model_dir, tmp_path / "base")
    adapter = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                             LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    adapter.save_pretrained(tmp_path / "adapter")
    cfg = EvalConfig(model=str(tmp_path / "adapter"), device="cpu")
    before = load_model(cfg)[1].fingerprint
    assert load_model(cfg)[1].fingerprint == before
    make_model(tiny_tokenizer, seed=1).save_pretrained(base)  # the base model retrained, adapter untouched
    assert load_model(cfg)[1].fingerprint != before
