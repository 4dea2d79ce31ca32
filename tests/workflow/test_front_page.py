"""The report's first page: ε = 0.2 at paper scale beside SB3 and the published references."""
import importlib.util
import json
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("front_page", ROOT / "workflow/scripts/front_page.py")
front_page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(front_page)


def test_anchor_beside_references(tmp_path):
    scores = pd.DataFrame({
        "run_id": [f"Hopper-v5/clip_0.2/seed{k}" for k in range(3)] + ["Swimmer-v5/clip_0.2/seed0", "Hopper-v5/no_clip/seed0"],
        "task": ["Hopper-v5"] * 3 + ["Swimmer-v5", "Hopper-v5"], "variant": ["clip_0.2"] * 4 + ["no_clip"],
        "variant_label": ["Clipping, ε = 0.2"] * 4 + ["No clipping or penalty"],
        "score": [1000.0, 1200.0, 1400.0, 50.0, 10.0]})
    manifests = scores[["run_id"]].assign(env_version="v5", total_steps=1_000_000)
    sb3 = tmp_path / "sb3_reference" / "Hopper-v5" / "seed0"
    sb3.mkdir(parents=True)
    pd.DataFrame({"global_step": [1, 2], "episode_return": [2000.0, 2400.0], "episode_length": [1, 1]}).to_parquet(
        sb3 / "episodes.parquet")
    (sb3 / "manifest.json").write_text(json.dumps({"task": "Hopper-v5", "seed": 0, "total_steps": 1_000_000}))

    note, table = front_page.anchor_beside_references(tmp_path, scores, manifests, "clip_0.2")
    rows = front_page.cells_of(table.splitlines())
    assert rows[0][:2] == ["task", "ours, v5"] and len(rows) == 3  # header, rule, Hopper (Swimmer: one seed only)
    hopper = rows[2]
    assert hopper[:4] == ["Hopper-v5", "1,200.0", "1,000.0 to 1,400.0", "2,200.0 (1 of 3 seeds)"]
    # The real reference table: Hopper's published PPO numbers at 1M that score the end of training reach
    # down to CleanRL's 2,231.1 − 656.7; ours lies wholly below.
    assert hopper[5] == "below" and hopper[4].startswith("1,574.4 to ")
    assert "disagreement" in note and note.startswith("Clipping, ε = 0.2, per task")
    assert front_page.anchor_beside_references(tmp_path, scores[scores["task"] == "Swimmer-v5"], manifests, "clip_0.2") is None


def test_checks_beside_table1(tmp_path):
    """A check's runs (here table1_v4's ε = 0.2 on InvertedPendulum-v4, 3 seeds) beside Table 1's anchor on the
    v5 task: its score, and check − anchor with the interval that resamples both sides' seeds."""
    import dataclasses

    import numpy as np

    from analysis.io import load_study
    from analysis.scores import final_scores
    from ppo.pipeline.job import run_meta
    from ppo.pipeline.study import load_study as load_study_config
    from ppo.pipeline.study import run_dir
    from ppo.training.driver import RunSpec, train_group

    assert front_page.checks_beside_table1(tmp_path) is None  # nothing published yet
    scores = {}
    for name, task in (("table1", "InvertedPendulum-v5"), ("table1_v4", "InvertedPendulum-v4")):
        study = load_study_config(name, "smoke")
        one = next(r for r in study.runs() if r.task == task and r.variant.name == "clip_0.2")
        runs = [dataclasses.replace(one, seed=k) for k in range(3)]
        # The published layout (published/<study>/paper/runs) holding short runs: 2048 steps each.
        study = dataclasses.replace(study, scale="paper")
        train_group([RunSpec(r.run_id, r.task, dataclasses.replace(r.variant.config, total_steps=2048), r.seed,
                             run_dir(tmp_path, study, r), meta=run_meta(study, r)) for r in runs], log=lambda _: None)
        scores[name] = final_scores(load_study(tmp_path / name / "paper" / "runs")[0])["score"].to_numpy(float)

    note, table = front_page.checks_beside_table1(tmp_path, n_resamples=2000)
    head, _, row, *more = front_page.cells_of(table.splitlines())
    assert not more and head[4].startswith("check − Table 1's clip_0.2")
    assert row[:2] == ["InvertedPendulum-v4", "table1_v4: Clipping, ε = 0.2"]
    assert row[2].startswith(f"{scores['table1_v4'].mean():,.1f} (")
    assert row[3] == f"{scores['table1'].mean():,.1f}"
    difference, low, high = (float(x) for x in row[4].replace("(", "").replace(")", "").replace(" to ", " ").split())
    assert difference == round(scores["table1_v4"].mean() - scores["table1"].mean(), 1)
    assert low <= difference <= high and low < high
    # The interval is the bootstrap of the two samples, seed 0: recomputed here with the same draws.
    rng = np.random.default_rng(0)
    draws = (rng.choice(scores["table1_v4"], (2000, 3)).mean(axis=1) - rng.choice(scores["table1"], (2000, 3)).mean(axis=1))
    assert (low, high) == tuple(round(float(q), 1) for q in np.quantile(draws, [0.025, 0.975]))
    assert row[5:] == ["", "", "", "no reference"]  # no SB3 run on v4; the published numbers are at 1M steps
    assert "resamples" in note
