"""Each registered report (ppo/reports.py) writes exactly the files it declares, so the pipeline's rule,
made from the declaration, names every output and no other."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import test_analysis_cli
import test_atari
import test_figure3

from ppo.reports import REPORTS

REPO = Path(__file__).resolve().parents[2]


def tiny_study(kind: str, root: Path, make_run, make_random) -> tuple[Path, list[Path], str]:
    """(runs folder, random-score files, anchor variant) of the report's synthetic study."""
    if kind == "table1":
        for (task, variant), values in test_analysis_cli.SCORES.items():
            for seed, value in enumerate(values):
                make_run(task, variant, seed, [value] * 3)
        return root / "runs", [make_random("Hopper-v5", [-1.0, 1.0]), make_random("Swimmer-v5", [-10.0])], "clip_0.2"
    if kind == "figure3":
        return (*test_figure3.build_study(root), "clip_0.2")
    if kind == "atari":
        return test_atari.build_study(root), [], "atari_ppo"
    raise AssertionError(f"report {kind} has no tiny study here: add one")


@pytest.mark.parametrize("kind", sorted(REPORTS))
def test_report_writes_exactly_its_declared_outputs(kind, tmp_path, make_run, make_random):
    rep = REPORTS[kind]
    runs, randoms, anchor = tiny_study(kind, tmp_path, make_run, make_random)
    out = tmp_path / "report"
    argv = ["--runs", str(runs), "--reference-dir", str(REPO / "reference"), "--out-dir", str(out),
            "--budget-note", "REDUCED BUDGET: unit-test budget", "--n-resamples", "200", "--seed", "0"]
    if rep.random_scores:
        argv += ["--random", *map(str, randoms)]
    if rep.anchor:
        argv += ["--variant", anchor]
    if rep.sb3_reference:
        argv += ["--sb3-dir", str(REPO / "published" / "sb3_reference")]
    spec = importlib.util.spec_from_file_location(f"report_{kind}", REPO / "workflow" / "scripts" / rep.script)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(argv) == 0
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted(name for name, _ in rep.files(anchor))
    for _, caption in rep.files(anchor):
        assert caption is None or (REPO / "workflow" / "report" / caption).is_file(), caption
