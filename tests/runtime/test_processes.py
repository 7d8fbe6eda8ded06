"""The command line leaves no process group to the interpreter's teardown."""

from __future__ import annotations

import socket

import pytest
import torch.distributed as dist

from twinkle_hf.cli import main


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def launched_group(monkeypatch):
    """A gloo group of one process that the environment says a launcher started with two."""
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    monkeypatch.setenv("WORLD_SIZE", "2")
    yield
    if dist.is_initialized():
        dist.destroy_process_group()


def test_the_command_line_destroys_the_launchers_group_as_it_ends(launched_group, capsys):
    assert dist.is_initialized()
    assert main(["--model", "x", "--tensor-parallel", "3"]) == 2  # fails before any model loads
    assert "multiple of 3 processes" in capsys.readouterr().err
    assert not dist.is_initialized()


def test_a_single_process_run_leaves_a_group_it_did_not_start_alone(monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(_free_port()))
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    dist.init_process_group("gloo", rank=0, world_size=1)  # a caller's own group, under plain python
    try:
        assert main(["--model", "x", "--tensor-parallel", "3"]) == 2
        assert dist.is_initialized()
    finally:
        dist.destroy_process_group()
