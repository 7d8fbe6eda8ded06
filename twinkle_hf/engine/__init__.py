"""Stage 4, engine: the model in, forward passes, letter scoring and generation, several processes.

Read first: :func:`~twinkle_hf.engine.scoring.score_prompts` (scoring.py). Models and tokenizers are
loaded by loading.py; batches are sized by batching.py; shared prefixes run once (prefix.py);
forward.py unwraps wrapped models; generation is planned in generate.py (shapes: plan.py) and
decoded in decode.py; distributed.py shards and gathers across processes; stats.py counts.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "broadcast": "distributed", "generate_sharded": "distributed", "is_main": "distributed",
    "process_state": "distributed", "score_sharded": "distributed", "model_config": "forward",
    "generate_texts": "generate", "stop_token_ids": "generate", "ModelInfo": "loading", "load_model": "loading",
    "load_tokenizer": "loading", "locate_model": "locate", "resolve_device": "loading",
    "GenerationSettings": "plan", "group_jobs": "prefix", "Prompts": "scoring", "ScoreSettings": "scoring",
    "score_prompts": "scoring", "ScoreStats": "stats",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
