"""analysis.figure3 and workflow/scripts/figure3_report.py on a synthetic Figure 3 study.

Study (every run repeats one return, so its final score is that return; 1000 steps per run):

    task        random  clip_0.2 (ppo)  trpo      a2c       cem
    Hopper-v5   0       10, 20          30, 50    4, 6      0, 2
    Swimmer-v5  -10     0, 10           15, 25    30, 50    -10, 0

Best per task: trpo on Hopper (mean 40, span 40), a2c on Swimmer (mean 40, span 50). Normalised:
clip Hopper 0.25, 0.5, Swimmer 0.2, 0.4 -> mean 0.3375; trpo 0.75, 1.25, 0.5, 0.7 -> 0.8;
a2c 0.1, 0.15, 0.8, 1.2 -> 0.5625; cem 0, 0.05, 0, 0.2 -> 0.0625.

Groups and clocks (throughput):
    Hopper   clip s0+s1 one group, wall 10 s, 2000 steps           -> 200 steps/s
             trpo s0, s1 alone, walls 8 and 12 s                   -> 2000 / 20 = 100, ratio 0.5
             a2c s0+s1 in a group of three (s2 not loaded), 10 s   -> 3000 / 10 = 300, ratio 1.5
             cem s0 alone (no wall_seconds: updates wall_time 20), s1 diverged at 500 steps
             (wall_time 10)                                        -> 1500 / 30 = 50, ratio 0.25
    Swimmer  clip s0+s1, 5 s -> 400; trpo s0+s1, 10 s -> 200, ratio 0.5;
             a2c s0+s1 and cem s0+s1 in one group of four, 20 s   -> 200 each, ratio 0.5
Medians over tasks of the ratio: clip 1, trpo 0.5, a2c (1.5, 0.5) -> 1, cem (0.25, 0.5) -> 0.375.
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import scipy.stats
from conftest import write_run

from analysis.figure3 import (
    NO_REFERENCE,
    aggregate_table,
    budget_line,
    final_score_table,
    run_algorithms,
    throughput,
)
from analysis.io import RunDataError, load_study
from analysis.references import load_references, reference_metric
from analysis.scores import final_scores
from analysis.table1 import normalize_scores

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "workflow" / "scripts" / "figure3_report.py"
REFERENCE_CSV = REPO / "reference" / "mujoco_reference_scores.csv"
ALGORITHM = {"clip_0.2": "ppo", "trpo": "trpo", "a2c": "a2c", "cem": "cem"}
LABEL = {"clip_0.2": "PPO (clip, ε = 0.2)", "trpo": "TRPO", "a2c": "A2C", "cem": "CEM"}
SCORES = {
    ("Hopper-v5", "clip_0.2"): [10.0, 20.0],
    ("Hopper-v5", "trpo"): [30.0, 50.0],
    ("Hopper-v5", "a2c"): [4.0, 6.0],
    ("Hopper-v5", "cem"): [0.0, 2.0],
    ("Swimmer-v5", "clip_0.2"): [0.0, 10.0],
    ("Swimmer-v5", "trpo"): [15.0, 25.0],
    ("Swimmer-v5", "a2c"): [30.0, 50.0],
    ("Swimmer-v5", "cem"): [-10.0, 0.0],
}


def rid(task: str, variant: str, seed: int) -> str:
    """The run id conftest.write_run gives."""
    return f"{task}__{variant}__s{seed}"


# (task, variant, seed) -> (group members as (variant, seed), wall_seconds or None)
CLOCKS = {
    ("Hopper-v5", "clip_0.2", 0): ([("clip_0.2", 0), ("clip_0.2", 1)], 10.0),
    ("Hopper-v5", "clip_0.2", 1): ([("clip_0.2", 0), ("clip_0.2", 1)], 10.0),
    ("Hopper-v5", "trpo", 0): ([("trpo", 0)], 8.0),
    ("Hopper-v5", "trpo", 1): ([("trpo", 1)], 12.0),
    ("Hopper-v5", "a2c", 0): ([("a2c", 0), ("a2c", 1), ("a2c", 2)], 10.0),
    ("Hopper-v5", "a2c", 1): ([("a2c", 0), ("a2c", 1), ("a2c", 2)], 9.5),
    ("Hopper-v5", "cem", 0): ([("cem", 0)], None),
    ("Hopper-v5", "cem", 1): ([("cem", 1)], None),
    ("Swimmer-v5", "clip_0.2", 0): ([("clip_0.2", 0), ("clip_0.2", 1)], 5.0),
    ("Swimmer-v5", "clip_0.2", 1): ([("clip_0.2", 0), ("clip_0.2", 1)], 5.0),
    ("Swimmer-v5", "trpo", 0): ([("trpo", 0), ("trpo", 1)], 10.0),
    ("Swimmer-v5", "trpo", 1): ([("trpo", 0), ("trpo", 1)], 10.0),
    **{
        ("Swimmer-v5", v, s): ([("a2c", 0), ("a2c", 1), ("cem", 0), ("cem", 1)], 20.0)
        for v in ("a2c", "cem")
        for s in (0, 1)
    },
}
# Per-algorithm extra update columns, clashing in type on purpose: only the common ones are loaded.
EXTRA_UPDATE_COLUMNS = {
    "ppo": {"clipfrac": [0.1, 0.2], "diverged": [False, False]},
    "trpo": {"line_search_steps": [3, 4], "diverged": [0.0, 0.0]},
    "a2c": {"value_loss": [1.0, 0.5]},
    "cem": {"elite_return": ["n/a", "n/a"]},
}


def write_fig3_run(
    runs_dir: Path,
    task: str,
    variant: str,
    seed: int,
    returns: list[float],
    group: list[str] | None = None,
    wall_seconds: float | None = None,
    update_steps: list[int] | None = None,
    update_walls: list[float] | None = None,
    reduced: bool = True,
    **kw,
) -> Path:
    """A run in the figure3 records contract: conftest's run plus algorithm, group, clock fields."""
    run_dir = write_run(runs_dir, task, variant, seed, returns, **kw)
    algorithm = ALGORITHM.get(variant, variant)
    steps = update_steps or [500, 1000]
    walls = update_walls or [s / 100.0 for s in steps]
    extra = {k: v[: len(steps)] for k, v in EXTRA_UPDATE_COLUMNS.get(algorithm, {}).items()}
    updates = {"update": list(range(len(steps))), "global_step": steps, "sps": [100.0] * len(steps), "wall_time": walls}
    pd.DataFrame(updates | extra).to_parquet(run_dir / "updates.parquet", index=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest.update(
        algorithm=algorithm,
        variant_label=LABEL.get(variant, variant),
        study="figure3",
        scale="reduced" if reduced else "paper",
        scale_label="REDUCED BUDGET: 1k steps per run" if reduced else "paper protocol",
        reduced=reduced,
        paper_row=None,
        group=group or [manifest["run_id"]],
    )
    if wall_seconds is not None:
        manifest["wall_seconds"] = wall_seconds
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def write_random(path: Path, returns: list[float]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame({"episode_return": returns, "episode_length": [10] * len(returns)}).to_parquet(path, index=False)
    return path


def build_study(root: Path, keep=lambda task, variant: True) -> tuple[Path, list[Path]]:
    """The study of the module docstring under root/runs (``keep`` selects a subset)."""
    runs = root / "runs"
    for (task, variant), values in SCORES.items():
        if not keep(task, variant):
            continue
        for seed, value in enumerate(values):
            members, wall = CLOCKS[(task, variant, seed)]
            kw = {}
            if (task, variant, seed) == ("Hopper-v5", "cem", 1):
                kw = dict(status="diverged", diverged_at_step=500, update_steps=[500], update_walls=[10.0])
            elif (task, variant) == ("Hopper-v5", "cem"):
                kw = dict(update_walls=[10.0, 20.0])
            write_fig3_run(
                runs, task, variant, seed, [value] * 3,
                group=[rid(task, v, s) for v, s in members], wall_seconds=wall, **kw,
            )
    randoms = [
        write_random(root / "random" / "Hopper-v5.parquet", [-1.0, 1.0]),
        write_random(root / "random" / "Swimmer-v5.parquet", [-10.0]),
    ]
    return runs, randoms


@pytest.fixture
def study(tmp_path):
    return build_study(tmp_path)


def _load(runs: Path):
    episodes, updates, manifests = load_study(runs, update_columns=("wall_time",))
    return episodes, updates, manifests


# ---------------------------------------------------------------- loading


def test_load_keeps_group_and_only_common_update_columns(study):
    runs, _ = study
    _, updates, manifests = _load(runs)
    row = manifests.set_index("run_id").loc[rid("Hopper-v5", "a2c", 0)]
    assert row["group"] == tuple(rid("Hopper-v5", "a2c", s) for s in range(3))
    assert row["algorithm"] == "a2c"
    assert set(updates.columns) == {"run_id", "task", "variant", "variant_label", "seed", "status",
                                    "update", "global_step", "wall_time"}
    # Loading every column instead: diverged is bool for ppo and float for trpo -> error naming a file.
    with pytest.raises(RunDataError, match=r"updates\.parquet: column types clash"):
        load_study(runs)


def test_missing_or_unknown_algorithm_names_the_manifest(tmp_path):
    run_dir = write_fig3_run(tmp_path / "runs", "Hopper-v5", "trpo", 0, [1.0])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    del manifest["algorithm"]
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    _, _, manifests = _load(tmp_path / "runs")
    with pytest.raises(RunDataError, match=r"manifest .*trpo/seed0/manifest\.json lacks key 'algorithm'"):
        run_algorithms(manifests)
    manifest["algorithm"] = "ddpg"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    _, _, manifests = _load(tmp_path / "runs")
    with pytest.raises(RunDataError, match=r"trpo/seed0/manifest\.json: unknown algorithm 'ddpg'"):
        run_algorithms(manifests)


def test_bad_group_field_names_the_manifest(tmp_path):
    run_dir = write_fig3_run(tmp_path / "runs", "Hopper-v5", "trpo", 0, [1.0])
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest["group"] = "Hopper-v5__trpo__s0"
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunDataError, match=r"seed0/manifest\.json: group must be a non-empty list"):
        _load(tmp_path / "runs")


# ---------------------------------------------------------------- final scores and references


def test_final_score_is_last_100_episodes(tmp_path):
    # 150 episodes: 50 of 0 then 100 of 10 -> last 100 average 10; a second seed of 20 -> mean 15.
    write_fig3_run(tmp_path / "runs", "Hopper-v5", "trpo", 0, [0.0] * 50 + [10.0] * 100)
    write_fig3_run(tmp_path / "runs", "Hopper-v5", "trpo", 1, [20.0] * 5)
    episodes, _, manifests = _load(tmp_path / "runs")
    table = final_score_table(final_scores(episodes), manifests, load_references(REFERENCE_CSV), n_resamples=2000)
    row = table.iloc[0]
    assert (row["our_mean"], row["n_seeds"], row["n_diverged"]) == (15.0, 2, 0)
    # Two seeds, 10 and 20: sd 7.071068, se 5, t(0.975, 1) = 12.706205: 15 ± 63.531024 (a bootstrap gave 10 to 20).
    assert (row["our_ci_low"], row["our_ci_high"]) == (pytest.approx(15 - 63.531024, abs=1e-5),
                                                       pytest.approx(15 + 63.531024, abs=1e-5))
    assert math.isnan(row["normalized_mean"])  # no normalised scores passed


def test_trpo_hopper_joins_every_trpo_hopper_reference(study):
    runs, randoms = study
    episodes, _, manifests = _load(runs)
    scores = final_scores(episodes)
    table = final_score_table(scores, manifests, load_references(REFERENCE_CSV), n_resamples=2000)
    trpo = table[(table["task"] == "Hopper-v5") & (table["algorithm"] == "trpo")]
    assert set(trpo["our_mean"]) == {40.0} and set(trpo["n_refs"]) == {6}
    got = {
        (r.ref_source.split(" ")[0], r.ref_env_version, r.ref_mean, r.ref_n_seeds, r.ref_metric)
        for r in trpo.itertuples()
    }
    assert got == {
        ("openai/baselines", "v2", 1912.9, 6, "final training reward, window not stated"),
        ("Fujimoto", "v1", 2471.30, 10, "max-over-training eval"),
        ("DLR-RM/rl-baselines3-zoo", "v3", 3618.386, 1, "single-run final-agent eval"),
        ("thu-ml/tianshou", "v3", 2046.0, 10, "max-over-training eval"),
        ("Henderson", "v1", 2828.0, 5, "last-100 training episodes"),
        ("Henderson", "v1", 2965.0, 5, "bootstrap mean of final return, window not stated"),
    }
    assert trpo["ref_algo"].str.lower().str.startswith("trpo").all()
    fujimoto = trpo[trpo["ref_source"].str.startswith("Fujimoto")].iloc[0]
    assert fujimoto["comparable"] == "v1 vs our v5; 1M vs our 1k steps; metric: max-over-training eval"

    # cem has no published row: one row saying so, reference columns empty.
    cem = table[(table["task"] == "Hopper-v5") & (table["algorithm"] == "cem")]
    assert len(cem) == 1 and cem["comparable"].iloc[0] == NO_REFERENCE
    assert cem["n_refs"].iloc[0] == 0 and pd.isna(cem["ref_source"].iloc[0]) and pd.isna(cem["ref_mean"].iloc[0])
    assert cem["n_diverged"].iloc[0] == 1 and cem["our_mean"].iloc[0] == 1.0

    # ppo rows never include trpo; a2c on Hopper joins the zoo and tianshou a2c rows.
    ppo = table[(table["task"] == "Hopper-v5") & (table["algorithm"] == "ppo")]
    assert not ppo["ref_algo"].str.contains("trpo").any() and len(ppo) == ppo["n_refs"].iloc[0] > 0
    a2c = table[(table["task"] == "Hopper-v5") & (table["algorithm"] == "a2c")]
    assert sorted(a2c["ref_mean"]) == [733.454, 1253.2]

    # Display order within a task follows the paper's algorithms: ppo, trpo, a2c, ..., cem.
    order = table.loc[table["task"] == "Hopper-v5", "algorithm"].drop_duplicates().tolist()
    assert order == ["ppo", "trpo", "a2c", "cem"]


def test_metric_comes_from_the_note_only():
    refs = load_references(REFERENCE_CSV)
    # CleanRL's Apr 2022 page: the note only says the meaning of ± is not defined.
    row = refs[refs["source"].str.contains("2fff248d") & (refs["env"] == "Hopper")].iloc[0]
    assert reference_metric(row["source"], row["note"], note_only=True) == "metric not stated"
    assert reference_metric(row["source"], row["note"]) == "last-100 training episodes"  # source-level rule
    # "same metric pipeline as CleanRL column" is stated in the note itself.
    baselines = refs[refs["note"].str.contains("same metric pipeline as CleanRL column")].iloc[0]
    assert reference_metric(baselines["source"], baselines["note"], note_only=True) == "last-100 training episodes"


# ---------------------------------------------------------------- normalisation and aggregate


def test_aggregate_uses_table1_normalisation(study):
    runs, randoms = study
    episodes, _, manifests = _load(runs)
    from analysis.io import load_random

    normalized = normalize_scores(final_scores(episodes), load_random(randoms))
    best = normalized.groupby("task")["best_variant"].first().to_dict()
    assert best == {"Hopper-v5": "trpo", "Swimmer-v5": "a2c"}
    agg = aggregate_table(normalized, manifests, n_resamples=2000).set_index("variant")
    assert agg["mean"].to_dict() == pytest.approx({"trpo": 0.8, "a2c": 0.5625, "clip_0.2": 0.3375, "cem": 0.0625})
    assert list(agg.index) == ["trpo", "a2c", "clip_0.2", "cem"]  # best mean first
    clip = agg.loc["clip_0.2"]
    assert clip["algorithm"] == "ppo" and (clip["n_tasks"], clip["n_runs"], clip["n_diverged"]) == (2, 4, 0)
    # Table 1's t interval stratified over tasks: v = s^2/n, Hopper (0.25, 0.5) 0.015625, Swimmer (0.2, 0.4) 0.01;
    # se = sqrt(0.025625) / 2; dof = 0.025625^2 / (0.015625^2 + 0.01^2) = 1.908059, t(0.975, 1.908059) = 4.507568
    # (scipy): half-width 0.360781 (the stratified bootstrap gave the seeds' extremes, 0.225 to 0.45).
    assert (clip["mean_ci_low"], clip["mean_ci_high"]) == (pytest.approx(0.3375 - 0.360781, abs=1e-6),
                                                           pytest.approx(0.3375 + 0.360781, abs=1e-6))
    # TRPO − PPO: Hopper 1 − 0.375, Swimmer 0.6 − 0.3 -> 0.4625; v 0.0625, 0.01 (TRPO), 0.015625, 0.01 (PPO);
    # dof = 0.098125^2 / (0.0625^2 + 0.01^2 + 0.015625^2 + 0.01^2) = 2.213253, t(0.975, 2.213253) = 3.928799
    # (scipy): half-width 0.615346, -0.152846 to 1.077846: crosses 0.
    trpo = agg.loc["trpo"]
    assert trpo["diff_vs_anchor"] == pytest.approx(0.4625) and trpo["vs_anchor"] == "not distinguishable"
    assert trpo["diff_ci_low"] == pytest.approx(-0.152846, abs=1e-6) and clip["vs_anchor"] == ""
    # CEM's Hopper seed 0 (score 0 = random) and Swimmer seed 0 (-10 = random) never beat the random policy.
    assert agg.loc["cem", "n_not_above_random"] == 2 and clip["n_not_above_random"] == 0
    assert clip["iqm"] == pytest.approx((0.25 + 0.4) / 2)  # middle two of 0.2, 0.25, 0.4, 0.5
    assert agg.loc["cem", "n_diverged"] == 1


# ---------------------------------------------------------------- throughput


def test_throughput_divides_group_steps_by_group_wall_time(study):
    runs, _ = study
    _, updates, manifests = _load(runs)
    table = throughput(manifests, updates, "clip_0.2")
    per_task = table[table["task"] != "median over tasks"].set_index(["task", "variant"])
    sps = per_task["steps_per_second"].to_dict()
    assert sps == pytest.approx({
        ("Hopper-v5", "clip_0.2"): 200.0, ("Hopper-v5", "trpo"): 100.0,
        ("Hopper-v5", "a2c"): 300.0, ("Hopper-v5", "cem"): 50.0,
        ("Swimmer-v5", "clip_0.2"): 400.0, ("Swimmer-v5", "trpo"): 200.0,
        ("Swimmer-v5", "a2c"): 200.0, ("Swimmer-v5", "cem"): 200.0,
    })
    assert per_task["ratio_to_ppo"].to_dict() == pytest.approx({
        ("Hopper-v5", "clip_0.2"): 1.0, ("Hopper-v5", "trpo"): 0.5,
        ("Hopper-v5", "a2c"): 1.5, ("Hopper-v5", "cem"): 0.25,
        ("Swimmer-v5", "clip_0.2"): 1.0, ("Swimmer-v5", "trpo"): 0.5,
        ("Swimmer-v5", "a2c"): 0.5, ("Swimmer-v5", "cem"): 0.5,
    })
    hopper_a2c = per_task.loc[("Hopper-v5", "a2c")]
    assert (hopper_a2c["n_groups"], hopper_a2c["group_sizes"], hopper_a2c["steps"]) == (1, "3", 3000.0)
    assert hopper_a2c["wall_seconds"] == 10.0  # the group's longest clock
    assert per_task.loc[("Hopper-v5", "cem"), "wall_source"] == "updates.parquet wall_time"
    assert per_task.loc[("Hopper-v5", "trpo"), "wall_source"] == "manifest wall_seconds"
    assert per_task.loc[("Swimmer-v5", "a2c"), "shared_with"] == "cem"
    assert per_task.loc[("Hopper-v5", "trpo"), "shared_with"] == ""

    medians = table[table["task"] == "median over tasks"].set_index("variant")
    assert medians["ratio_to_ppo"].to_dict() == pytest.approx({"clip_0.2": 1.0, "trpo": 0.5, "a2c": 1.0, "cem": 0.375})
    assert medians.loc["trpo", "steps_per_second"] == 150.0 and medians.loc["trpo", "ppo_steps_per_second"] == 300.0
    assert table["task"].tolist()[-4:] == ["median over tasks"] * 4


# ---------------------------------------------------------------- budget label


def test_budget_line_labels_reduced_runs(study):
    runs, _ = study
    _, _, manifests = _load(runs)
    assert budget_line(manifests).startswith("REDUCED BUDGET: 1k env steps per run, 2 seed(s)")
    assert budget_line(manifests, ["60k steps per run"]) == "REDUCED BUDGET: 60k steps per run"
    assert budget_line(manifests, ["REDUCED BUDGET: 60k steps"]) == "REDUCED BUDGET: 60k steps"
    full = manifests.assign(reduced=False, total_steps=1_000_000)
    assert budget_line(full, ["paper protocol"]) == "paper protocol"


# ---------------------------------------------------------------- command line


def _load_script():
    spec = importlib.util.spec_from_file_location("figure3_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _argv(runs: Path, randoms: list[Path], out: Path) -> list[str]:
    return [
        "--runs", str(runs), "--random", *map(str, randoms), "--reference-dir", str(REPO / "reference"),
        "--out-dir", str(out), "--budget-note", "REDUCED BUDGET: unit-test budget",
        "--n-resamples", "2000", "--curve-points", "5",
    ]


OUTPUTS = (
    "figure3_curves.png", "figure3_final_scores.csv", "figure3_final_scores.md", "figure3_aggregate.csv",
    "figure3_aggregate.md", "figure3_claim.csv", "figure3_claim.md", "figure3_throughput.csv", "figure3_throughput.md",
)


def test_cli_end_to_end(study, tmp_path):
    runs, randoms = study
    out = tmp_path / "report"
    assert _load_script().main(_argv(runs, randoms, out)) == 0
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    assert (out / "figure3_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    final = pd.read_csv(out / "figure3_final_scores.csv")
    swimmer_a2c = final[(final["task"] == "Swimmer-v5") & (final["variant"] == "a2c")]
    assert set(swimmer_a2c["our_mean"]) == {40.0} and set(swimmer_a2c["normalized_mean"]) == {1.0}
    assert sorted(swimmer_a2c["ref_mean"]) == [36.6, 200.627]
    hopper_clip = final[(final["task"] == "Hopper-v5") & (final["variant"] == "clip_0.2")]
    assert hopper_clip["normalized_mean"].tolist() == pytest.approx([0.375] * len(hopper_clip))

    agg = pd.read_csv(out / "figure3_aggregate.csv").set_index("variant")
    assert agg.loc["trpo", "mean"] == pytest.approx(0.8) and agg.loc["trpo", "algorithm"] == "trpo"
    md = (out / "figure3_aggregate.md").read_text()
    assert "- REDUCED BUDGET: unit-test budget" in md
    assert "Hopper-v5: random 0, best trpo 40" in md and "Swimmer-v5: random -10, best a2c 40" in md

    rates = pd.read_csv(out / "figure3_throughput.csv")
    median_cem = rates[(rates["task"] == "median over tasks") & (rates["variant"] == "cem")]
    assert median_cem["ratio_to_ppo"].iloc[0] == pytest.approx(0.375)
    assert "share a process and its clock" in (out / "figure3_throughput.md").read_text()
    assert "metric not stated" in (out / "figure3_final_scores.md").read_text()  # the note explains it


def test_cli_subset_without_ppo(tmp_path):
    runs, randoms = build_study(tmp_path, keep=lambda task, variant: variant in ("trpo", "a2c"))
    out = tmp_path / "report"
    assert _load_script().main(_argv(runs, randoms, out)) == 0
    for name in OUTPUTS:
        assert (out / name).is_file(), name
    rates = pd.read_csv(out / "figure3_throughput.csv")
    assert rates["ratio_to_ppo"].isna().all() and set(rates["algorithm"]) == {"trpo", "a2c"}
    assert "has no runs here: ratio_to_ppo is empty" in (out / "figure3_throughput.md").read_text()
    agg = pd.read_csv(out / "figure3_aggregate.csv").set_index("variant")
    # Best: trpo on Hopper (40), a2c on Swimmer (40) as before; trpo 0.75, 1.25, 0.5, 0.7 -> 0.8.
    assert agg.loc["trpo", "mean"] == pytest.approx(0.8)


def test_truncated_run_file_is_a_one_line_error(study, tmp_path):
    runs, randoms = study
    episodes = runs / "Hopper-v5" / "trpo" / "seed1" / "episodes.parquet"
    episodes.write_bytes(episodes.read_bytes()[:40])
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *_argv(runs, randoms, tmp_path / "report")],
        cwd=tmp_path,  # not the repo root: the script must find the analysis package itself
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("figure3_report: error: corrupt parquet file")
    assert str(episodes) in lines[0]


def test_claim_table_by_hand():
    from analysis.figure3 import claim_table

    scores = pd.DataFrame({"task": ["A"] * 4 + ["B"] * 4, "variant": ["clip_0.2", "clip_0.2", "trpo", "trpo"] * 2,
                           "score": [10.0, 10.0, 1.0, 1.0, 3.0, 5.0, 4.0, 4.0]})
    table = claim_table(scores, n_resamples=4000).set_index("task")
    assert table.loc["A", "best"] == "clip_0.2" and table.loc["A", "p_clip_0.2_best"] == 1.0
    # B: PPO's seeds (3, 5) give means 3, 4, 5 with probabilities 1/4, 1/2, 1/4; TRPO is 4: PPO best only at 5
    # (a tie at 4 goes to the first column, clip_0.2, by idxmax), so P = 3/4 up to resampling noise.
    assert table.loc["B", "clip_0.2_rank"] == 1 and table.loc["B", "best"] == "clip_0.2"  # 4.0 vs 4.0: first wins
    assert abs(table.loc["B", "p_clip_0.2_best"] - 0.75) < 0.03
    # Welch against the best other algorithm: A 10 − 1 with no spread on either side: exact, "best"; B (3, 5)
    # against (4, 4): 0, v = 2/2 + 0 = 1, dof 1, t(0.975, 1) = 12.706205: 0 ± 12.706205, "not distinguishable".
    assert (table.loc["A", "best_other"], table.loc["A", "verdict"]) == ("trpo", "best")
    assert (table.loc["B", "diff_ci_low"], table.loc["B", "diff_ci_high"]) == (pytest.approx(-12.706205, abs=1e-6),
                                                                             pytest.approx(12.706205, abs=1e-6))
    assert table.loc["B", "verdict"] == "not distinguishable"


def test_below_the_best_holds_its_error_over_all_the_other_algorithms():
    """PPO (0, 1, 2) against TRPO (2.45, 3.45, 4.45): Welch's t = 2.45 / √(1/3 + 1/3) = 3.0006 on 4 degrees of freedom,
    p = 0.0399, so the single 95% test against the best other calls PPO below. With A2C beside them (0, 0.5, 1, below
    PPO: its p counts as 1), Holm's test over the two others needs p ≤ 0.05 / 2: not distinguishable; with TRPO the only
    other algorithm, p ≤ 0.05: below the best."""
    from analysis.figure3 import claim_outcome, claim_table

    ppo, trpo, a2c = [0.0, 1.0, 2.0], [2.45, 3.45, 4.45], [0.0, 0.5, 1.0]
    rows = [("C", "clip_0.2", v) for v in ppo] + [("C", "trpo", v) for v in trpo] + [("C", "a2c", v) for v in a2c]
    rows += [("D", "clip_0.2", v) for v in ppo] + [("D", "trpo", v) for v in trpo]
    table = claim_table(pd.DataFrame(rows, columns=["task", "variant", "score"]), n_resamples=100).set_index("task")
    assert scipy.stats.ttest_ind(ppo, trpo, equal_var=False).pvalue == pytest.approx(0.0399, abs=5e-5)
    assert table.loc["C", "diff_ci_high"] < 0 and table.loc["D", "diff_ci_high"] < 0  # the single test: below
    assert (table.loc["C", "verdict"], table.loc["C", "below_others"]) == ("not distinguishable", "")
    assert (table.loc["D", "verdict"], table.loc["D", "below_others"]) == ("below the best", "trpo")
    assert claim_outcome(table.reset_index()) == "partly reproduced"  # below on one task of two, best on none
