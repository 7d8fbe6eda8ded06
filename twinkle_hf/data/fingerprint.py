"""Cheap but real identities of what a run evaluates, so that ``--resume`` never mixes two models
or two datasets into one result.

A weight file is identified by (see :func:`weight_digest` for why each part is there) its name,
size, mtime, safetensors header and sampled content: about 1 MiB read per file, whatever its size.
A ``.gguf`` is hashed whole, and the canonical rows of the datasets are hashed whole.
"""

from __future__ import annotations

import hashlib
import json
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from ..schema import CANONICAL_COLUMNS

WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack", ".npz",
                   ".onnx")
SAMPLES = 16  # evenly spaced windows, the first at offset 0 and the last ending at the file's end
SAMPLE_BYTES = 64 << 10
MAX_HEADER_BYTES = 100 << 20  # the safetensors library's own limit; a bigger "header" is not one


def _sampled_content(fh, size: int) -> Iterable[bytes]:
    """``SAMPLES`` windows of ``SAMPLE_BYTES``; a file smaller than that is read whole."""
    if size <= SAMPLES * SAMPLE_BYTES:
        yield fh.read()
        return
    step = (size - SAMPLE_BYTES) / (SAMPLES - 1)
    for i in range(SAMPLES):
        fh.seek(round(i * step))
        yield fh.read(SAMPLE_BYTES)


def _safetensors_header(fh, size: int) -> bytes:
    """The JSON header (8-byte little-endian length, then the JSON); empty if the file has none."""
    head = fh.read(8)
    if len(head) < 8:
        return b""
    (length,) = struct.unpack("<Q", head)
    if length > min(size - 8, MAX_HEADER_BYTES):
        return b""  # not a safetensors file (a corrupt one is refused when it is loaded)
    return fh.read(length)


def weight_digest(path: Path) -> str:
    """Identity of one weight file, from about 1 MiB of reads however large it is.

    - name and size: which shard, and truncation, appended data or changed shapes;
    - mtime_ns: any rewrite (``save_pretrained`` after more training) even where the sampled bytes
      happen to match; copying without keeping times changes it too, which refuses a resume that
      was safe (a rerun) rather than accepting one that was not (a silently mixed result);
    - the safetensors header: tensor names, dtypes, shapes and offsets, and its metadata;
    - sampled content: new values in the same layout when the mtime was kept (``cp -p``,
      ``rsync -t``, a download); retraining changes nearly every tensor, so the windows see it.
    """
    stat = path.stat()
    digest = hashlib.sha256(f"{path.name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    with open(path, "rb") as fh:
        if path.suffix == ".safetensors":
            digest.update(_safetensors_header(fh, stat.st_size))
            fh.seek(0)
        for window in _sampled_content(fh, stat.st_size):
            digest.update(window)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of the whole file. Used for a .gguf: the number equals ``sha256sum`` and the hash the
    Hub shows, and reading it costs far less than transformers' dequantizing load that follows."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def folder_fingerprint(folder: str | Path) -> str:
    """A model or adapter folder's files (not its subfolders, e.g. checkpoint-*): weight files by
    :func:`weight_digest`, every other file (config, tokenizer, index) by its whole content."""
    digest = hashlib.sha256()
    for item in sorted(Path(folder).iterdir()):
        if not item.is_file():
            continue
        part = weight_digest(item) if item.suffix in WEIGHT_SUFFIXES else file_sha256(item)
        digest.update(f"{item.name}\0{part}\n".encode())
    return digest.hexdigest()


def combine(*parts: str | None) -> str:
    """One fingerprint from several (an adapter and its base model); None stays distinct from ''."""
    return hashlib.sha256(json.dumps(list(parts)).encode()).hexdigest()


class Fingerprinted(Protocol):
    """A loaded dataset (data.load.LoadedDataset), as far as its identity goes."""

    @property
    def fingerprint(self) -> str: ...


def dataset_fingerprint(name: str, rows: Any, fewshot: Any) -> str:
    """sha256 of one dataset's name and canonical rows (and its few-shot pool, or None): any
    changed question, option, answer, subject or id, an added or removed row, changes it."""
    digest = hashlib.sha256(json.dumps(["dataset", name]).encode() + b"\n")
    for split, table in (("rows", rows), ("fewshot", fewshot)):
        if table is None:
            continue
        digest.update(json.dumps([split, len(table)]).encode() + b"\n")
        # What decides a prediction, read a column at a time. [:] takes a dataset's column as one list
        # rather than row by row through its formatter, which is far faster; the values, and so the
        # hash, are the same.
        columns = [table[column][:] for column in CANONICAL_COLUMNS]
        for row in zip(*columns):
            digest.update(json.dumps(row, ensure_ascii=False).encode() + b"\n")
    return digest.hexdigest()


def data_fingerprint(datasets: Sequence[Fingerprinted]) -> str:
    """The identity of every evaluated dataset, in order (each hashed once per loaded dataset:
    :attr:`LoadedDataset.fingerprint`)."""
    return combine(*(item.fingerprint for item in datasets))
