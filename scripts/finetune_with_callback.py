"""Fine-tune a causal LM for a few steps and watch its positional bias with TwinkleCallback.

    python scripts/finetune_with_callback.py --model ../shared/models/smollm2-135m-instruct/SmolLM2-135M-Instruct.Q4_1.gguf
    python scripts/finetune_with_callback.py --model HuggingFaceTB/SmolLM2-135M --steps 20 --every 5

It trains on the few-shot (dev) questions of the embedded MMLU sample, written as solved
examples, and every ``--every`` steps runs a CircularEval (cyclic orders) on ``--limit`` test
questions per subject, logging ``twinkle/<metric>`` through the Trainer.
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a clone without installing

import datasets
import torch
from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

from twinkle_hf import EvalConfig, TwinkleCallback, load_benchmark, load_model, load_tokenizer
from twinkle_hf.data.load import DEFAULT_DATASET
from twinkle_hf.prompts.templates import EN_TEMPLATE, format_example, format_fewshot_block


def training_texts() -> list[str]:
    """The embedded sample's dev questions as solved, lm-eval-formatted examples."""
    pool = load_benchmark(DEFAULT_DATASET).fewshot
    return [format_fewshot_block(EN_TEMPLATE, row["subject"], [])
            + format_example(EN_TEMPLATE, row["question"], row["choices"], row["answer"]) for row in pool]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="local dir, hub id or .gguf file")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--every", type=int, default=2, help="evaluate every N optimizer steps")
    parser.add_argument("--limit", type=int, default=5, help="test questions per subject per evaluation")
    parser.add_argument("--output-dir", default="results/finetune-demo")
    args = parser.parse_args()

    config = EvalConfig(model=args.model, shuffle=True, shuffle_mode="cyclic", limit=args.limit, bootstrap=0)
    tokenizer = load_tokenizer(config)
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    model, _ = load_model(config)
    train = datasets.Dataset.from_dict(tokenizer(training_texts(), truncation=True, max_length=512))
    trainer = Trainer(
        model=model,
        args=TrainingArguments(output_dir=args.output_dir, max_steps=args.steps, per_device_train_batch_size=4,
                               learning_rate=2e-5, logging_steps=1, report_to=[], save_strategy="no",
                               use_cpu=not torch.cuda.is_available()),
        train_dataset=train,
        data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False),
        processing_class=tokenizer,
    )
    callback = TwinkleCallback(config=config, every_n_steps=args.every).attach(trainer)
    trainer.train()
    print("\nstep | accuracy | acc_original | all_correct | RStd | share of A")
    for step, logs in callback.history:
        print(f"{step:4d} | {logs['twinkle/accuracy']:.3f} | {logs.get('twinkle/acc_original', float('nan')):.3f} | "
              f"{logs.get('twinkle/all_correct', float('nan')):.3f} | {logs.get('twinkle/rstd', float('nan')):.1f} | "
              f"{logs['twinkle/pred_share_A']:.2f}")


if __name__ == "__main__":
    main()
