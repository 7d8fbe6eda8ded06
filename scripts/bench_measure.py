"""Measuring for scripts/bench.py: wall and CPU seconds, forward passes and tokens, peak memory,
the device's matmul peak, and what the machine is."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib.metadata
import os
import platform
import resource
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch


def _status_kib(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise OSError(f"/proc/self/status has no {field}")


def _memory_reset(device: torch.device) -> int | None:
    """Restart the peak counter; the baseline in bytes (None where a peak can't be restarted)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        return torch.cuda.memory_allocated(device)
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        # glibc keeps freed heap pages resident, and the next run would reuse them unseen.
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    try:
        Path("/proc/self/clear_refs").write_text("5")  # Linux: VmHWM restarts from the current RSS
        return _status_kib("VmRSS") * 1024
    except OSError:
        return None


def _memory_peak(device: torch.device) -> int:
    """Bytes at the peak since :func:`_memory_reset` (which must have returned a baseline)."""
    return torch.cuda.max_memory_allocated(device) if device.type == "cuda" else _status_kib("VmHWM") * 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _machine_busy_seconds() -> float | None:
    """CPU seconds all processes of the machine have run (Linux /proc/stat; steal counts as busy:
    a hypervisor's other guests took it); None elsewhere."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    if fields[:1] != ["cpu"] or len(fields) < 9:
        return None
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[1:9])
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def others_cores(window_s: float) -> float | None:
    """How many cores' worth other processes ran over the next ``window_s`` seconds (None: unknown)."""
    busy, own = _machine_busy_seconds(), _cpu_seconds()
    time.sleep(window_s)
    end = _machine_busy_seconds()
    return None if busy is None or end is None else max(0.0, end - busy - (_cpu_seconds() - own)) / window_s


def wait_until_quiet(threshold: float, max_wait_s: float = 120.0, window_s: float = 1.0) -> float:
    """Wait until other processes run under ``threshold`` cores for one ``window_s``, at most
    ``max_wait_s``; the seconds waited. A run started on busy cores measures the other load."""
    start = time.perf_counter()
    while time.perf_counter() - start < max_wait_s:
        load = others_cores(window_s)
        if load is None or load < threshold:
            break
    return time.perf_counter() - start


@contextlib.contextmanager
def measure(model: torch.nn.Module, device: torch.device) -> Iterator[dict[str, Any]]:
    """What the block costs, measured around it.

    Wall and CPU seconds (all threads of this process), and CPU seconds of every other process.
    Forward passes and the input tokens run through ``model`` (padding included; in total and per
    pass), and the seconds inside its forward. Peak memory above the level at the start."""
    stats: dict[str, Any] = {"forwards": 0, "forward_tokens": 0, "pass_tokens": [], "forward_seconds": 0.0}
    began: list[float] = []

    def count(_module: Any, args: tuple, kwargs: dict) -> None:
        stats["forwards"] += 1
        ids = kwargs.get("input_ids", args[0] if args else None)
        tokens = 0 if ids is None else int(ids.numel())  # inputs_embeds only: not counted
        stats["forward_tokens"] += tokens
        stats["pass_tokens"].append(tokens)
        began.append(time.perf_counter())

    def done(_module: Any, _args: tuple, _kwargs: dict, _out: Any) -> None:
        # Host seconds outside the forward = wall - this; on CUDA (asynchronous) it counts launches only.
        stats["forward_seconds"] += time.perf_counter() - began.pop()

    handle = model.register_forward_pre_hook(count, with_kwargs=True)
    handle_done = model.register_forward_hook(done, with_kwargs=True)
    base = _memory_reset(device)
    start, cpu, busy = time.perf_counter(), _cpu_seconds(), _machine_busy_seconds()
    try:
        yield stats
    finally:
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        stats["seconds"] = time.perf_counter() - start
        stats["cpu_seconds"] = _cpu_seconds() - cpu
        busy_end = _machine_busy_seconds()
        stats["others_cpu_seconds"] = None if busy is None or busy_end is None else max(
            0.0, busy_end - busy - stats["cpu_seconds"])
        handle.remove()
        handle_done.remove()
        stats["peak_memory_bytes"] = None if base is None else max(0, _memory_peak(device) - base)


def matmul_peak_flops(dtype: torch.dtype, device: torch.device) -> float:
    """Best FLOP/s of square matmuls in the model's dtype on its device: the denominator of MFU."""
    n, reps = (2048, 1) if device.type == "cpu" else (8192, 10)
    a, b = (torch.randn(n, n, device=device).to(dtype) for _ in range(2))
    best = float("inf")
    for i in range(7):  # two to warm up, best of five
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        for _ in range(reps):
            a @ b
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = min(best, time.perf_counter() - start) if i >= 2 else best
    return 2 * n**3 * reps / best


def machine(device: torch.device) -> dict[str, Any]:
    cpu = platform.processor()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as fh:
        cpu = next((ln.split(":", 1)[1].strip() for ln in fh if ln.startswith("model name")), cpu)
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads(), "device": str(device),
            "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else cpu,
            "python": platform.python_version(), "load_average_at_start": os.getloadavg(),
            "versions": {m: importlib.metadata.version(m) for m in ("torch", "transformers", "datasets", "lm_eval")}}
