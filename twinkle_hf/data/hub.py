"""Hub datasets: read one from the local cache (or the network unless offline), and fail fast on a
hub id that can only come from the network when the network is not there.

Without this, an uncached hub id on a machine that cannot reach the Hub waits through the hub
libraries' retries, per file asked for, before the same clear error (docs/reliability.md, "Offline").
So before the libraries are asked, an uncached id costs one short TCP connect to the Hub's host (or
to the proxy that would carry the request). Local paths and cached ids are never probed. Also loads
a hub dataset (``load_hub_dataset``) with that check, and a clear error when it cannot.
"""

from __future__ import annotations

import contextlib
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import datasets

from ..errors import TwinkleError

PROBE_SECONDS = 3.0
DEFAULT_PORTS = {"http": 80, "https": 443}


def hub_cached(repo_id: str, repo_type: str = "model") -> bool:
    """Whether the local cache holds a snapshot of ``repo_id`` (any revision: the libraries pick).

    Lenient on purpose: a wrong "cached" only skips the fast failure, never a working load.
    """
    import huggingface_hub.constants as hub

    folder = Path(hub.HF_HUB_CACHE) / f"{repo_type}s--{repo_id.replace('/', '--')}" / "snapshots"
    if folder.is_dir() and any(folder.iterdir()):
        return True
    if repo_type != "dataset":
        return False
    import datasets

    owner, _, name = repo_id.rpartition("/")
    prefix = f"{owner}___".lower() if owner else name.lower()
    processed = Path(datasets.config.HF_DATASETS_CACHE)  # load_dataset's Arrow files, by owner___name
    return processed.is_dir() and any(p.name.lower().startswith(prefix) for p in processed.iterdir())


def _route(endpoint: str) -> tuple[str, int, str]:
    """(host, port, what it is) a request to ``endpoint`` connects to: the proxy when one is set."""
    url = urlsplit(endpoint)
    host = url.hostname or ""
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        via = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        return via.hostname or "", via.port or DEFAULT_PORTS.get(via.scheme, 80), f"proxy for {endpoint}"
    return host, url.port or DEFAULT_PORTS.get(url.scheme, 443), endpoint


def hub_unreachable(timeout: float = PROBE_SECONDS) -> str | None:
    """None when a TCP connection to the Hub (``HF_ENDPOINT``) opens within ``timeout`` seconds,
    else why not, e.g. ``"127.0.0.1:9 (http://127.0.0.1:9) could not be reached (Connection refused)"``."""
    import huggingface_hub.constants as hub

    host, port, what = _route(hub.ENDPOINT)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as err:  # refused, no route, DNS failure, timeout
        why = err.strerror or str(err) or type(err).__name__
        if isinstance(err, TimeoutError):
            why = f"no answer within {timeout:g} s"
        return f"{host}:{port} ({what}) could not be reached ({why})"


def why_not_loadable(repo_id: str, repo_type: str = "model") -> str | None:
    """Why ``repo_id`` cannot be loaded right now (not cached, and the Hub unreachable), else None.
    A cached id is never probed."""
    return None if hub_cached(repo_id, repo_type) else hub_unreachable()


@contextlib.contextmanager
def hub_offline(enabled: bool) -> Iterator[None]:
    """Offline mode for this call: the hub libraries read HF_HUB_OFFLINE once, at import."""
    import huggingface_hub.constants as hub

    cfg = datasets.config
    saved = (cfg.HF_HUB_OFFLINE, cfg.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE)
    if enabled:
        cfg.HF_HUB_OFFLINE = cfg.HF_DATASETS_OFFLINE = hub.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        cfg.HF_HUB_OFFLINE, cfg.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE = saved


def _require_reachable(repo: str) -> None:
    """An uncached dataset when the Hub cannot be reached: fail at once, not after the retries."""
    why = why_not_loadable(repo, "dataset")
    if why:
        raise ConnectionError(f"the Hub at {why}; check your network, proxy or HF_ENDPOINT")


def load_hub_dataset(source: str, offline: bool) -> Any:
    """A Hub dataset from the local cache, or from the network unless offline."""
    repo, _, config = source.partition(":")
    try:
        if not (offline or datasets.config.HF_HUB_OFFLINE):
            _require_reachable(repo)
        with hub_offline(offline):
            return datasets.load_dataset(repo, config or None)
    except (ConnectionError, FileNotFoundError) as exc:
        why = "offline mode is on" if offline or datasets.config.HF_HUB_OFFLINE else str(exc)
        args = f"{repo!r}, {config!r}" if config else repr(repo)
        raise TwinkleError(
            f"{source!r} is not a local path, and the Hugging Face dataset {repo!r} is not in the "
            f"local cache ({why}): pass a local file, folder or save_to_disk folder, or download "
            f"it once with network access: python -c \"import datasets; "
            f"datasets.load_dataset({args})\"") from None
    except ValueError as exc:  # e.g. an unknown config name; the message lists the valid ones
        raise TwinkleError(f"{source}: {exc}") from None
