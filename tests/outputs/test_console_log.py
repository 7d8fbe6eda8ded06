"""run.log: the console of a run (summary, progress bars settled, warnings, errors) in its folder."""

from __future__ import annotations

import logging
import warnings

from twinkle_hf.cli import main


def test_run_log_holds_what_the_console_showed_and_the_warnings(tiny_model_dir, mmlu_dir, tmp_path, monkeypatch,
                                                                 capsys):
    import twinkle_hf.evaluation

    real = twinkle_hf.evaluation.evaluate

    def noisy(*args, **kwargs):
        warnings.warn("a planted python warning", UserWarning, stacklevel=1)
        logging.getLogger("transformers.modeling_utils").warning("a planted library warning")
        return real(*args, **kwargs)

    monkeypatch.setattr(twinkle_hf.evaluation, "evaluate", noisy)
    out = tmp_path / "run"
    args = ["--model", str(tiny_model_dir), "--dataset", str(mmlu_dir), "--limit", "2", "--device", "cpu",
            "--output-dir", str(out)]
    assert main(args) == 0  # with progress bars
    console = capsys.readouterr()
    log = (out / "run.log").read_text(encoding="utf-8")
    assert log.startswith("== ") and "twinkle-hf --model" in log.splitlines()[0]
    assert "a planted python warning" in log and "a planted library warning" in log
    assert "| **overall** |" in log and "wrote " in log and "| **overall** |" in console.out
    assert "\r" not in log and log.count("scoring") <= 2  # one settled line per progress bar, not one per update
    # a finished run's folder is refused untouched; with --overwrite the failing run's log replaces it, error included
    assert main(args + ["--dataset", str(tmp_path / "missing.csv")]) == 2
    assert (out / "run.log").read_text(encoding="utf-8") == log
    assert main(args + ["--dataset", str(tmp_path / "missing.csv"), "--overwrite"]) == 2
    log = (out / "run.log").read_text(encoding="utf-8")
    assert log.count("== ") == 1 and "error: dataset" in log and "missing.csv" in log and "--overwrite" in log
