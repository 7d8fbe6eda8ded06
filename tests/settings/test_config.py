"""One config object: defaults <- YAML <- flags; bad keys and values say what to fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from twinkle_hf.errors import TwinkleError
from twinkle_hf.settings.config import EvalConfig, build_config
from twinkle_hf.settings.files import read_yaml

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "configs").glob("*.yaml"))


def test_precedence_defaults_yaml_flags():
    cfg = build_config({"seeds": 3, "num_fewshot": 5}, {"seeds": 7, "limit": None})
    assert (cfg.seeds, cfg.num_fewshot, cfg.limit, cfg.seed) == (7, 5, None, 1234)


def test_shuffle_flag_and_mode():
    assert build_config({}, {"shuffle": True}).permutation_mode == "random"
    assert build_config({}, {"shuffle_mode": "cyclic"}).permutation_mode == "cyclic"
    assert build_config({}, {}).permutation_mode == "none"
    assert build_config({"shuffle": True}, {"shuffle_mode": "all"}).permutation_mode == "all"


@pytest.mark.parametrize("values, message", [
    ({"sedes": 3}, "unknown config key 'sedes' \\(did you mean 'seeds'\\?\\)"),
    ({"seeds": "five"}, "seeds must be an integer"),
    ({"seeds": 0}, "seeds must be an integer >= 1"),
    ({"shuffle": "yes"}, "shuffle must be true or false"),
    ({"shuffle_mode": "circular"}, "shuffle_mode must be one of"),
    ({"batch_size": "big"}, "batch_size must be an integer"),
    ({"device": "tpu"}, "device must be"),
    ({"templates": {"cue": "x"}}, "unknown template key 'cue'"),
    ({"columns": {"gold": "x"}}, "unknown columns key 'gold'"),
])
def test_bad_values_are_errors_that_name_the_key(values, message):
    with pytest.raises(TwinkleError, match=message):
        build_config(values, {})


def test_a_mode_without_shuffle_is_an_error_not_a_silent_unshuffled_run():
    with pytest.raises(TwinkleError, match="shuffle is off"):
        EvalConfig(shuffle_mode="cyclic")
    with pytest.raises(TwinkleError, match="shuffle is off"):
        build_config({"shuffle": False, "shuffle_mode": "all"}, {})


def test_yaml_file_errors(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("seeds: [1,\n", encoding="utf-8")
    with pytest.raises(TwinkleError, match="not valid YAML"):
        read_yaml(bad)
    listy = tmp_path / "list.yaml"
    listy.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(TwinkleError, match="mapping"):
        read_yaml(listy)


@pytest.mark.parametrize("path", CONFIGS, ids=[p.name for p in CONFIGS])
def test_shipped_configs_are_valid(path):
    cfg = build_config(read_yaml(path), {"model": "x"})
    assert isinstance(cfg, EvalConfig) and cfg.datasets


def test_config_round_trips_to_a_plain_dict():
    cfg = build_config({"columns": {"question": "q"}, "datasets": ["a", "b"]}, {})
    assert build_config(cfg.to_dict(), {}) == cfg


def test_dataset_overrides_take_the_longest_prefix_and_say_what_cannot_differ():
    cfg = build_config({"dataset_overrides": {"data": {"num_fewshot": 1}, "data/math/": {"shuffle_mode": "cyclic"}}})
    assert cfg.for_dataset("data/math/algebra.csv").permutation_mode == "cyclic"
    assert cfg.for_dataset("data/math/algebra.csv").num_fewshot == 0  # the longest prefix alone
    assert cfg.for_dataset("data/history").num_fewshot == 1 and cfg.for_dataset("other") is cfg
    assert cfg.to_dict()["dataset_overrides"]["data/math/"] == {"shuffle_mode": "cyclic"}
    with pytest.raises(TwinkleError, match="'model' cannot differ between datasets"):
        build_config({"dataset_overrides": {"data": {"model": "other"}}})
    with pytest.raises(TwinkleError, match="logit scoring and generation cannot share a run"):
        build_config({"dataset_overrides": {"data": {"method": "box"}}})
    with pytest.raises(TwinkleError, match=r"dataset_overrides\['data'\]: seeds must be an integer >= 1"):
        build_config({"dataset_overrides": {"data": {"seeds": 0}}})
