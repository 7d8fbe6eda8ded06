"""How many questions of a dataset a shuffle must treat with care, and which (no model needed).

    python scripts/option_roles.py --dataset ../shared/data/mmlu/data [--split test] [--show 100] [--json out.json]
    python scripts/option_roles.py --benchmark cmmlu=path/to/cmmlu

Reads the data as a run would (any layout `--dataset` or `--benchmark` takes), classifies every question's
options (twinkle_hf/prompts/anchors.py) and prints the counts per rule: options kept at their letter
("All of the above", 以上都不对), letter references rewritten ("Both A and C", "AB"), questions kept in
their original order (the text names options by letter), and the look-alikes left as content (an
option made of letters that is not a reference: vitamins, letter lists, an option naming its own
letter). ``--show N`` prints N classified options, spread over the data, to read by eye.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from twinkle_hf.data.sources import as_datasets
from twinkle_hf.prompts.anchors import classify_options, letter_list
from twinkle_hf.settings.config import build_config


def classify_rows(rows: list[dict]) -> tuple[collections.Counter, list[dict]]:
    """Counts per rule over ``rows`` (canonical rows) and one record per option that any rule looked at."""
    counts: collections.Counter = collections.Counter()
    seen = []
    for row in rows:
        roles = classify_options(row["question"], row["choices"])
        counts["questions"] += 1
        counts["questions affected"] += not roles.plain
        counts["questions with a pinned option"] += bool(roles.pinned)
        counts["questions with a letter reference"] += bool(roles.refs)
        counts["questions kept in order"] += roles.fixed
        for i, text in enumerate(row["choices"]):
            rule = ("pinned" if i in roles.pinned else "reference" if i in roles.refs else
                    "look-alike (letters, content)" if letter_list(text) is not None and len(text.strip()) > 1 else "")
            if rule:
                counts[f"options: {rule}"] += 1
                seen.append({"id": row["id"], "letter": "ABCDEFGHIJ"[i], "option": text, "rule": rule,
                             "options": row["choices"]})
    return counts, seen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", action="append", default=[])
    parser.add_argument("--benchmark", action="append", default=[])
    parser.add_argument("--split", default="test")
    parser.add_argument("--show", type=int, default=0, help="print N classified options, spread over the data")
    parser.add_argument("--json", help="write the counts and every classified option here")
    args = parser.parse_args(argv)
    cfg = build_config(overrides={"datasets": tuple(args.dataset), "benchmarks": tuple(args.benchmark),
                                  "split": args.split, "offline": True})
    total: collections.Counter = collections.Counter()
    every: list[dict] = []
    for data in as_datasets(None, cfg):
        counts, seen = classify_rows(list(data.rows))
        print(f"{data.name}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        total.update(counts)
        every += seen
    step = max(1, len(every) // args.show) if args.show else 0
    for record in every[::step][: args.show] if step else []:
        print(f"{record['rule']:<30} {record['id']} {record['letter']}: {record['option']!r}  | "
              + " | ".join(record["options"]))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"counts": dict(total), "options": every}, fh, ensure_ascii=False, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
