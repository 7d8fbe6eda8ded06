"""What ``--model`` names: a local directory, a hub id, or a ``.gguf`` file; refused in one line where it
cannot load (not a GGUF file, a GGUF download folder passed whole, the gguf package missing)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from ..errors import TwinkleError

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
GGUF_MAGIC = b"GGUF"


def locate_model(model: str) -> tuple[str, str, str | None]:
    """(kind, directory or hub id, gguf file name) for what the user passed as ``--model``."""
    path = Path(model).expanduser()
    if model.endswith(".gguf"):
        if not path.is_file():
            raise FileNotFoundError(f"--model {model}: no such .gguf file")
        _check_gguf(model, path)
        require_gguf_package(model)
        return "gguf", str(path.parent), path.name
    if path.is_dir():
        _refuse_gguf_folder(model, path)
        return "local", str(path), None
    if path.exists():
        raise TwinkleError(f"--model {model}: a file that is not .gguf; pass the model's directory or a .gguf file")
    if _HUB_ID.match(model) and not model.startswith("."):
        return "hub", model, None
    raise FileNotFoundError(f"--model {model}: no such directory, .gguf file, or hub id")


def has_gguf_package() -> bool:
    return importlib.util.find_spec("gguf") is not None


def require_gguf_package(model: str) -> None:
    """A .gguf needs the gguf package; without it transformers says "install torch and gguf" even
    where torch is installed, so say which extra to install instead."""
    if not has_gguf_package():
        raise TwinkleError(f'--model {model}: a .gguf file needs the gguf package; install it with '
                           f'pip install -e ".[gguf]" (or pip install "gguf>=0.10")')


def _refuse_gguf_folder(model: str, path: Path) -> None:
    """A folder holding .gguf files but no config.json is a GGUF download: name the file to pass."""
    ggufs = sorted(p.name for p in path.glob("*.gguf"))
    if ggufs and not (path / "config.json").is_file():
        more = f" (or one of the others: {', '.join(ggufs[1:4])}{' ...' if len(ggufs) > 4 else ''})" \
            if len(ggufs) > 1 else ""
        raise TwinkleError(f"--model {model}: the folder holds {ggufs[0]} but no config.json; pass the .gguf "
                           f"file itself: --model {path / ggufs[0]}{more}")


def _check_gguf(model: str, path: Path) -> None:
    """A file named .gguf that is not one is refused here, in one line, not deep inside gguf."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head != GGUF_MAGIC:
        found = "it is empty" if not head else f"it starts with {head!r}"
        raise TwinkleError(f"--model {model}: not a GGUF file ({found}, not the GGUF magic bytes "
                           f"{GGUF_MAGIC!r}); pass a complete .gguf file or the model's directory")
