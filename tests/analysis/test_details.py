"""analysis.details and workflow/scripts/details_report.py on a synthetic details study.

Study (every run repeats one return, so its final score is that return; random: Hopper 0, Swimmer -10):

    task        clip_0.2 (anchor)  mistake_epochs_20   detail_target_kl_0.015  detail_time_limit_bootstrap  modern
    Hopper-v5   10, 20             -10, -8 (s1 div.)   10, 20                  12, 22                       30, 50
    Swimmer-v5  0, 10              -20, -18            0, 10                   5, 15                        30, 50

Best per task: modern on both (Hopper mean 40, span 40; Swimmer mean 40, span 50). mistake_epochs_20 is worse
than the anchor on every seed, and below the random policy: normalised Hopper -0.25, -0.2, Swimmer -0.2, -0.16 against
the anchor's 0.25, 0.5 and 0.2, 0.4; effect (-0.6 - 0.48) / 2 = -0.54 with Welch's interval stratified over tasks
(v = s^2/n: anchor 0.015625, 0.01, mistake 0.000625, 0.0004; dof 2.06) wholly below 0. Its full-batch KL (0.05) is
above the anchor's (0.01); target_kl runs stop early in one update of four. detail_orthogonal_init (no claim) runs on
Hopper only.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import write_random, write_run

from analysis import details
from analysis.stats import Interval
from ppo.config.experiments import Claim, Mechanism, load_variant

REPO = Path(__file__).resolve().parents[2]
SCORES = {
    ("Hopper-v5", "clip_0.2"): [10.0, 20.0], ("Swimmer-v5", "clip_0.2"): [0.0, 10.0],
    ("Hopper-v5", "mistake_epochs_20"): [-10.0, -8.0], ("Swimmer-v5", "mistake_epochs_20"): [-20.0, -18.0],
    ("Hopper-v5", "detail_target_kl_0.015"): [10.0, 20.0], ("Swimmer-v5", "detail_target_kl_0.015"): [0.0, 10.0],
    ("Hopper-v5", "detail_time_limit_bootstrap"): [12.0, 22.0],
    ("Swimmer-v5", "detail_time_limit_bootstrap"): [5.0, 15.0],
    ("Hopper-v5", "modern"): [30.0, 50.0], ("Swimmer-v5", "modern"): [30.0, 50.0],
    ("Hopper-v5", "detail_orthogonal_init"): [10.0, 20.0],
}
KL = {"mistake_epochs_20": 0.05}


def build_study(root: Path, seeds: int = 2) -> tuple[Path, list[Path]]:
    """The study of the module docstring under root/runs (the first ``seeds`` seeds of each cell)."""
    runs = root / "runs"
    for (task, variant), values in SCORES.items():
        for seed, value in enumerate(values[:seeds]):
            diverged = (task, variant, seed) == ("Hopper-v5", "mistake_epochs_20", 1)
            run = write_run(runs, task, variant, seed, [value] * 3, status="diverged" if diverged else "completed",
                            diverged_at_step=500 if diverged else None)
            kl = KL.get(variant, 0.01)
            updates = pd.DataFrame({"update": [1, 2, 3, 4], "global_step": [250, 500, 750, 1000],
                                    "approx_kl": [kl, kl, kl, np.inf if diverged else kl], "kl": [kl] * 4,
                                    "clipfrac": [0.1] * 4, "entropy": [1.0] * 4, "explained_variance": [0.5] * 4})
            if variant == "detail_target_kl_0.015":
                updates["minibatch_steps"] = [320, 320, 160, 320]
            updates.to_parquet(run / "updates.parquet", index=False)
    randoms = [write_random(root / "random" / "Hopper-v5.parquet", [0.0]),
               write_random(root / "random" / "Swimmer-v5.parquet", [-10.0])]
    return runs, randoms


def variant_files(runs: Path) -> list[Path]:
    names = sorted({p.parent.parent.name for p in runs.glob("*/*/seed*/manifest.json")})
    return [REPO / "experiments" / "variants" / f"{name}.yaml" for name in names]


def _script():
    spec = importlib.util.spec_from_file_location("details_report", REPO / "workflow/scripts/details_report.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def report(tmp_path: Path, seeds: int = 2) -> Path:
    runs, randoms = build_study(tmp_path, seeds)
    out = tmp_path / "report"
    argv = ["--runs", str(runs), "--random", *map(str, randoms), "--reference-dir", str(REPO / "reference"),
            "--out-dir", str(out), "--variant", "clip_0.2", "--variant-files", *map(str, variant_files(runs)),
            "--n-resamples", "200", "--budget-note", "REDUCED BUDGET: unit-test budget"]
    assert _script().main(argv) == 0
    return out


WORSE = Claim("worse")
BETTER = Claim("better")
NONE = Claim("none", margin=0.1)


@pytest.mark.parametrize("claim, interval, mechanism, expected", [
    (WORSE, (-0.5, -0.1), "", details.SUPPORTED),
    (WORSE, (0.1, 0.5), "", details.CONTRADICTED),
    (WORSE, (-0.5, 0.1), "", details.INCONCLUSIVE),
    (BETTER, (0.1, 0.5), "", details.SUPPORTED),
    (BETTER, (-0.5, -0.1), "", details.CONTRADICTED),
    (NONE, (-0.05, 0.08), "", details.SUPPORTED),
    (NONE, (0.12, 0.3), "", details.CONTRADICTED),
    (NONE, (0.05, 0.3), "", details.INCONCLUSIVE),
    (Claim("worse", mechanism=Mechanism("kl", ">", "anchor")), (-0.5, -0.1), "yes", details.SUPPORTED),
    (Claim("worse", mechanism=Mechanism("kl", ">", "anchor")), (-0.5, -0.1), "unclear", details.INCONCLUSIVE),
    (Claim("worse", mechanism=Mechanism("kl", ">", 0.05)), (-0.5, -0.1), "no", details.CONTRADICTED),
    (WORSE, (math.nan, math.nan), "", details.INCONCLUSIVE),
])
def test_verdict_follows_the_stated_rule(claim, interval, mechanism, expected):
    assert details.verdict(claim, Interval(0.0, *interval), mechanism)[0] == expected


def test_the_effect_is_the_mean_over_tasks_of_the_difference_and_one_seed_has_no_interval():
    frame = pd.DataFrame({"task": ["A"] * 4 + ["B"] * 4, "variant": ["x", "x", "y", "y"] * 2,
                          "seed": [0, 1] * 4, "normalized": [1.0, 1.2, 0.0, 0.2, 0.5, 0.5, 0.5, 0.5]})
    effect = details.difference(frame, "normalized", "x", "y", n_resamples=500)
    # Welch stratified over tasks: v = s^2/n, A: x (1, 1.2) 0.01, y (0, 0.2) 0.01; B: no spread. se = sqrt(0.02) / 2,
    # dof = 0.02^2 / (0.01^2 + 0.01^2) = 2, t(0.975, 2) = 4.302653: half-width 0.304243.
    assert (effect.point, effect.low, effect.high) == (pytest.approx(0.5), pytest.approx(0.5 - 0.304243, abs=1e-6),
                                                       pytest.approx(0.5 + 0.304243, abs=1e-6))
    assert details.difference(frame, "normalized", "x", "y", ["B"]).point == pytest.approx(0.0)
    one_seed = details.difference(frame[frame["seed"] == 0], "normalized", "x", "y")
    assert one_seed.point == pytest.approx(0.5) and math.isnan(one_seed.low) and math.isnan(one_seed.high)
    assert math.isnan(details.difference(frame, "normalized", "x", "z").point)  # no task in common


def test_run_statistics_skip_non_finite_values_and_count_early_stops():
    manifests = pd.DataFrame({"run_id": ["a", "b"], "task": ["T", "T"], "variant": ["kl", "kl"],
                              "variant_label": ["K", "K"], "seed": [0, 1], "status": ["completed", "diverged"]})
    updates = pd.DataFrame({"run_id": ["a", "a", "b", "b"], "approx_kl": [0.01, 0.03, np.nan, np.inf],
                            "kl": [0.1] * 4, "clipfrac": [0.2] * 4, "entropy": [1.0] * 4,
                            "explained_variance": [0.5] * 4, "minibatch_steps": [320, 100, 320, 320]})
    stats = details.run_statistics(updates, manifests, {"kl": 320}).set_index("run_id")
    assert stats.loc["a", "approx_kl"] == pytest.approx(0.02) and math.isnan(stats.loc["b", "approx_kl"])
    assert stats["early_stop_fraction"].tolist() == [0.5, 0.0]
    assert stats["diverged_fraction"].tolist() == [0.0, 1.0]
    assert math.isnan(details.run_statistics(updates, manifests)["early_stop_fraction"].iloc[0])  # no full count


def test_the_variant_files_claims_are_checked_against_the_runs(tmp_path):
    out = report(tmp_path)
    claims = pd.read_csv(out / "details_claims.csv").set_index("variant")
    mistake = claims.loc["mistake_epochs_20"]
    assert mistake["prediction"] == "score below the anchor; kl > anchor"
    assert mistake["effect"] == pytest.approx(-0.54) and mistake["effect_ci_high"] < 0
    assert mistake["mechanism_found"] == "yes" and mistake["mechanism_measured"] == pytest.approx(0.04)
    assert mistake["verdict"] == details.SUPPORTED and mistake["n_diverged"] == 1
    assert mistake["approx_kl"] == pytest.approx(0.05) and mistake["kl_anchor"] == pytest.approx(0.01)
    target = claims.loc["detail_target_kl_0.015"]
    assert target["minibatch_steps"] == pytest.approx(280) and target["early_stop_fraction"] == pytest.approx(0.25)
    assert target["mechanism_found"] == "no" and target["verdict"] == details.CONTRADICTED  # it stops in 1 of 4
    # the claim is about HalfCheetah, Swimmer and Reacher: only Swimmer ran, so only Swimmer counts
    bootstrap = claims.loc["detail_time_limit_bootstrap"]
    assert bootstrap["tasks"] == "HalfCheetah, Swimmer, Reacher" and bootstrap["effect"] == pytest.approx(0.1)
    assert claims.loc["detail_orthogonal_init", "verdict"] == details.NO_CLAIM
    assert claims.loc["modern", "verdict"] == details.SUPPORTED
    assert "clip_0.2" not in claims.index
    markdown = (out / "details_claims.md").read_text()
    assert "REDUCED BUDGET: unit-test budget" in markdown and "Verdict rule" in markdown

    effects = pd.read_csv(out / "details_effects.csv").set_index("variant")
    assert effects.loc["modern", "effect"] == pytest.approx((0.625 + 0.7) / 2)
    assert effects.loc["modern", "p_improvement"] == 1.0 and effects.loc["detail_target_kl_0.015", "effect"] == 0
    per_task = pd.read_csv(out / "details_per_task.csv")
    assert len(per_task) == 9 and set(per_task["task"]) == {"Hopper-v5", "Swimmer-v5"}
    modern = pd.read_csv(out / "details_modern.csv")
    assert modern["task"].tolist() == ["Hopper-v5", "Swimmer-v5", details.ALL_TASKS]
    assert modern["paper_return"].tolist()[:2] == [15.0, 5.0] and math.isnan(modern["paper_return"].iloc[2])


def test_one_seed_gives_no_interval_and_no_verdict_but_every_output(tmp_path):
    out = report(tmp_path, seeds=1)
    claims = pd.read_csv(out / "details_claims.csv")
    assert claims["effect_ci_low"].isna().all()
    tested = claims[~claims["verdict"].isin([details.NO_CLAIM, details.NOT_TESTED])]
    assert set(tested["verdict"]) == {details.INCONCLUSIVE}
    assert (out / "details_mechanisms.png").stat().st_size > 0 and (out / "details_curves.png").stat().st_size > 0


def test_a_claim_about_tasks_that_did_not_run_is_not_tested():
    normalized = pd.DataFrame({"task": ["Hopper-v5"] * 2, "variant": ["a", "b"], "variant_label": ["A", "B"],
                               "seed": [0, 0], "normalized": [0.5, 0.6], "status": ["completed"] * 2})
    stats = normalized.assign(run_id=["1", "2"], **{s: 0.0 for s in details.RUN_STATS})
    claim = load_variant("detail_time_limit_bootstrap").claim
    table = details.claims_table(normalized, stats, {"b": ("text", claim)}, "a", n_resamples=50)
    assert table["verdict"].tolist() == [details.NOT_TESTED]
