"""Evaluate a local Hugging Face causal LM on multiple-choice benchmarks, with option shuffling.

    python scripts/eval.py --model HuggingFaceTB/SmolLM2-135M --shuffle
    accelerate launch scripts/eval.py --model Qwen/Qwen2.5-0.5B --shuffle --dataset path/to/mmlu

Same as the `twinkle-hf` console script; `--help` lists every flag.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

from twinkle_hf.cli import main

if __name__ == "__main__":
    sys.exit(main())
