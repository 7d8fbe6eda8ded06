"""Peak memory of this process: the device's (CUDA) and its resident set, started afresh when an
evaluation begins, so that a callback between training steps does not report the training's."""

from __future__ import annotations

import sys

import torch


def _status_peak() -> int | None:
    """VmHWM of /proc/self/status in bytes (Linux: the peak that clear_refs resets); None elsewhere."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def peak_rss() -> int | None:
    """This process's peak resident set size in bytes since :func:`reset_peaks` (Linux), else since
    it started; None where the OS does not say."""
    peak = _status_peak()
    if peak is not None:
        return peak
    try:
        import resource
    except ImportError:  # Windows
        return None
    most = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(most) if sys.platform == "darwin" else int(most) * 1024  # bytes on macOS, KiB on Linux


def reset_peaks(device: torch.device) -> None:
    """Start the peaks an evaluation reports afresh: the device's (CUDA) and the process's resident
    set (Linux)."""
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")  # resets VmHWM to the current resident set
    except OSError:
        pass
