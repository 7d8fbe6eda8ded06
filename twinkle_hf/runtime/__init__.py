"""The runtime stage: one run over several processes (accelerate launch, torchrun).

Read first: :func:`~twinkle_hf.runtime.layout.layout_of` (layout.py): how the run is spread, read
from the model (placement.py). rows.py deals rows to the processes and gathers them back;
processes.py picks the state and lets the main process decide; lockstep.py pairs the passes of a
model no process holds whole, over the handshake of handshake.py; memory.py reads peak memory.
"""

from __future__ import annotations

from ..lazy import lazy_attributes

# what the stages above use: name -> module (imported on first use)
_EXPORTS = {
    "Layout": "layout", "layout_of": "layout", "Lockstep": "lockstep", "broadcast": "processes",
    "is_main": "processes", "process_state": "processes", "deal_rows": "rows", "gather_rows": "rows",
    "group_rows": "rows",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_attributes(__name__, _EXPORTS)
