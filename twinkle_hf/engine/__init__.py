"""The engine stage: forward passes, letter scoring and generation, sharded over processes.

Read first: :func:`~twinkle_hf.engine.scoring.score_prompts` (scoring.py). Batches are sized by
batching.py; shared prefixes run once (prefix.py); forward.py holds what a pass needs of the model;
generation is planned in generate.py (shapes: plan.py) and decoded in decode.py; distributed.py
runs a part over this process's share of the rows (the runtime stage deals and gathers them);
stats.py counts.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "generate_sharded": "distributed", "score_sharded": "distributed", "generate_texts": "generate",
    "stop_token_ids": "generate", "GenerationSettings": "plan", "group_jobs": "prefix", "Prompts": "scoring",
    "ScoreSettings": "scoring", "score_prompts": "scoring", "ScoreStats": "stats",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
