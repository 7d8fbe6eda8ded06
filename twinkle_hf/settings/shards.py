"""``--shard K/N``: one of N independent runs that together score every row once (the scheduler
starts them; ``twinkle-hf merge`` joins them). ``auto`` reads the index from a job array's
variables: Slurm's, or a Kubernetes Indexed Job's with the count in ``TWINKLE_SHARDS``."""

from __future__ import annotations

from collections.abc import Mapping

from ..errors import TwinkleError

SHARD_HELP = "K/N with 0 <= K < N (e.g. 0/8), or auto"


def parse_shard(text: str) -> tuple[int, int]:
    """(K, N) of ``"K/N"``; anything else is one line that says what a shard looks like."""
    head, slash, tail = str(text).strip().partition("/")
    if not (slash and head.strip().isdigit() and tail.strip().isdigit()):
        raise TwinkleError(f"shard must be {SHARD_HELP}; got {text!r}")
    k, n = int(head), int(tail)
    if n < 1 or k >= n:
        raise TwinkleError(f"shard {text!r}: K must be 0..N-1 and N at least 1 ({SHARD_HELP})")
    return k, n


def check_shard(value: object) -> None:
    """The config's ``shard``: None, ``auto`` or ``K/N``."""
    if value is None or value == "auto":
        return
    if not isinstance(value, str):
        raise TwinkleError(f"shard must be {SHARD_HELP}; got {value!r}")
    parse_shard(value)


def _integer(env: Mapping[str, str], name: str) -> int:
    text = env[name].strip()
    if not text.lstrip("-").isdigit():
        raise TwinkleError(f"--shard auto: {name}={env[name]!r} is not an integer")
    return int(text)


def shard_from_env(env: Mapping[str, str]) -> tuple[str, str]:
    """``--shard auto``: ("K/N", which variables gave it). Slurm's array (its task count, else its
    min and max ids), else a Kubernetes Indexed Job's ``JOB_COMPLETION_INDEX`` with the count in
    ``TWINKLE_SHARDS`` (Kubernetes gives none)."""
    if "SLURM_ARRAY_TASK_ID" in env:
        task = _integer(env, "SLURM_ARRAY_TASK_ID")
        if "SLURM_ARRAY_TASK_COUNT" in env and "SLURM_ARRAY_TASK_MIN" in env:
            low, count = _integer(env, "SLURM_ARRAY_TASK_MIN"), _integer(env, "SLURM_ARRAY_TASK_COUNT")
            used = "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of SLURM_ARRAY_TASK_COUNT"
        elif "SLURM_ARRAY_TASK_COUNT" in env:
            low, count = 0, _integer(env, "SLURM_ARRAY_TASK_COUNT")
            used = "SLURM_ARRAY_TASK_ID of SLURM_ARRAY_TASK_COUNT"
        elif "SLURM_ARRAY_TASK_MIN" in env and "SLURM_ARRAY_TASK_MAX" in env:
            low = _integer(env, "SLURM_ARRAY_TASK_MIN")
            count = _integer(env, "SLURM_ARRAY_TASK_MAX") - low + 1
            used = "SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of MAX - MIN + 1"
        else:
            raise TwinkleError("--shard auto: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor "
                               "SLURM_ARRAY_TASK_MIN/MAX; submit with sbatch --array=0-N, or pass --shard K/N")
        found = f"{task - low}/{count}"
    elif "JOB_COMPLETION_INDEX" in env:
        if "TWINKLE_SHARDS" not in env:
            raise TwinkleError("--shard auto: JOB_COMPLETION_INDEX is set but TWINKLE_SHARDS is not; set "
                               "TWINKLE_SHARDS to the Job's completions (Kubernetes gives no count)")
        found = f"{_integer(env, 'JOB_COMPLETION_INDEX')}/{_integer(env, 'TWINKLE_SHARDS')}"
        used = "JOB_COMPLETION_INDEX of TWINKLE_SHARDS"
    else:
        raise TwinkleError("--shard auto: no job array here (neither SLURM_ARRAY_TASK_ID nor JOB_COMPLETION_INDEX "
                           "is set); run it as a task of sbatch --array or of an Indexed Job, or pass --shard K/N")
    try:
        parse_shard(found)
    except TwinkleError as err:
        raise TwinkleError(f"--shard auto ({used}): {err}") from None
    return found, f"shard {found} from {used}"
