"""Stage 2, data: files, folders and hub ids in, canonical rows out (id, subject, question, choices, answer).

Read first: :func:`~twinkle_hf.data.load.load_benchmark` (load.py). Tables are read by readers.py, their
columns recognised by layouts.py, rows normalised by normalize.py (Arrow features: features.py);
fingerprint.py gives datasets and model files an identity, hub.py says why a hub id cannot load,
sources.py loads every dataset a config names.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "CANONICAL_FEATURES": "features", "PERMUTED_FEATURES": "features", "combine": "fingerprint",
    "data_fingerprint": "fingerprint", "file_sha256": "fingerprint", "folder_fingerprint": "fingerprint",
    "why_not_loadable": "hub", "parse_column_map": "layouts", "DEFAULT_DATASET": "load", "LoadedDataset": "load",
    "limit_per_subject": "load", "load_benchmark": "load", "DataArg": "sources", "as_datasets": "sources",
    "load_datasets": "sources", "quiet_datasets": "sources",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
