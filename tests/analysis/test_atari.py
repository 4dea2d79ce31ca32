"""analysis.atari and workflow/scripts/atari_report.py on a synthetic Atari study.

Study: 2 games x 2 algorithms x 2 seeds, 1000 agent steps per run, frame skip 4 (4000 frames). Most runs
log 150 episodes, 50 of value ``a`` then 100 of value ``b``: score (1) = (50a + 100b) / 150 = (a + 2b) / 3,
score (2) = b.

    game      variant    seed  episodes               score (1)             score (2)  human-normalised (Atari-57)
    Pong      atari_ppo  0     -21 x50, 14.6 x100     (-21 + 29.2)/3        14.6       (14.6 + 20.7)/35.3 = 1
    Pong      atari_ppo  1     -21 x50, -3.05 x100    (-21 - 6.1)/3         -3.05      0.5
    Pong      atari_a2c  0     -20.7 x4               -20.7                 -20.7      0        (4 episodes)
    Pong      atari_a2c  1     -20.7 x50, -11.875 x100 (-20.7 - 23.75)/3    -11.875    0.25     (diverged at 500)
    Breakout  atari_ppo  0     0 x50, 8 x100          16/3                  8          (8 - 1.7)/28.8
    Breakout  atari_ppo  1     0 x50, 24 x100         16                    24         (24 - 1.7)/28.8
    Breakout  atari_a2c  0, 1  30 x50, 16 x100        62/3                  16         (16 - 1.7)/28.8

Atari-57 (reference/atari_random_human.csv, deepmind/dqn_zoo rows): Pong random -20.7, human 14.6;
Breakout random 1.7, human 30.5. Wins, metric (1): Pong ppo (-3.15 vs -17.76), Breakout a2c (20.67 vs
10.67); metric (2): Pong ppo (5.775 vs -16.29), Breakout tie (16 = 16, exactly: integer scores).
"""

from __future__ import annotations

import importlib.util
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import write_run

from analysis.atari import (LAST_100, attach_env_protocol, budget_line, check_runs, load_atari_references,
                            load_random_human, load_table2, load_table6, task_game, unregistered_games)
from analysis.atari_curves import mean_curves, seed_curves_frames
from analysis.atari_tables import (NO_REFERENCE, aggregate_table, equivalence_range, human_normalized, reference_table,
                                   reported_spread, run_scores, table6, verdict_line, verdicts, win_counts)
from analysis.io import RunDataError, load_study

REPO = Path(__file__).resolve().parents[2]
REF = REPO / "reference"
SCRIPT = REPO / "workflow" / "scripts" / "atari_report.py"
ALL = "avg_episode_reward_over_all_of_training"
PONG_H, BREAKOUT_H = (-20.7, 14.6), (1.7, 30.5)  # Atari-57 (random, human), as in the CSV

EPISODES = {
    ("ALE/Pong-v5", "atari_ppo", 0): [-21.0] * 50 + [14.6] * 100,
    ("ALE/Pong-v5", "atari_ppo", 1): [-21.0] * 50 + [-3.05] * 100,
    ("ALE/Pong-v5", "atari_a2c", 0): [-20.7] * 4,
    ("ALE/Pong-v5", "atari_a2c", 1): [-20.7] * 50 + [-11.875] * 100,
    ("ALE/Breakout-v5", "atari_ppo", 0): [0.0] * 50 + [8.0] * 100,
    ("ALE/Breakout-v5", "atari_ppo", 1): [0.0] * 50 + [24.0] * 100,
    ("ALE/Breakout-v5", "atari_a2c", 0): [30.0] * 50 + [16.0] * 100,
    ("ALE/Breakout-v5", "atari_a2c", 1): [30.0] * 50 + [16.0] * 100,
}
DIVERGED = ("ALE/Pong-v5", "atari_a2c", 1)
DIVERGED_KEY = ("Pong", "atari_a2c", 1)  # the same run, indexed by game


def write_atari_run(runs: Path, task: str, variant: str, seed: int, returns: list[float], algorithm: str | None = None,
                    frame_skip: object = 4, update_steps: tuple[int, ...] = (500, 1000), **kw) -> Path:
    """conftest's run in the Atari records contract: algorithm, env_protocol, run id as ppo.training.driver writes it."""
    run_dir = write_run(runs, task, variant, seed, returns, **kw)
    steps = list(update_steps)
    pd.DataFrame({"update": range(1, len(steps) + 1), "global_step": steps}).to_parquet(
        run_dir / "updates.parquet", index=False)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    manifest.update(
        run_id=f"{task}/{variant}/seed{seed}", algorithm=algorithm or variant.removeprefix("atari_"),
        variant_label=variant.removeprefix("atari_").upper(), reduced=True, wall_seconds=3600.0,
        env_protocol={"id": task, "protocol": "paper2017", "frame_skip": frame_skip, "reward_clip": True},
    )
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def build_study(root: Path) -> Path:
    runs = root / "runs"
    for (task, variant, seed), returns in EPISODES.items():
        kw = {}
        if (task, variant, seed) == DIVERGED:
            kw = dict(status="diverged", diverged_at_step=500, update_steps=(500,))
        write_atari_run(runs, task, variant, seed, returns, **kw)
    return runs


def load(runs: Path):
    dirs = [m.parent for m in sorted(runs.rglob("manifest.json"))]
    episodes, updates, manifests = load_study(runs, dirs, update_columns=("update", "global_step"))
    return episodes, updates, attach_env_protocol(check_runs(manifests))


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    runs = build_study(tmp_path_factory.mktemp("atari"))
    episodes, updates, manifests = load(runs)
    return runs, episodes, updates, manifests, run_scores(episodes, manifests, updates)


@pytest.fixture(scope="module")
def refs():
    return {
        "table6": load_table6(REF / "ppo2017_table6_atari.csv"),
        "table2": load_table2(REF / "ppo2017_table2_atari_wins.csv"),
        "human": load_random_human(REF / "atari_random_human.csv"),
        "scores": load_atari_references(REF / "atari_reference_scores.csv"),
    }


def hns(score: float, scale: tuple[float, float]) -> float:
    return (score - scale[0]) / (scale[1] - scale[0])


# ---------------------------------------------------------------- names and reference tables


def test_every_table6_game_is_a_registered_ale_id():
    gymnasium = pytest.importorskip("gymnasium")
    ale_py = pytest.importorskip("ale_py")
    gymnasium.register_envs(ale_py)
    games = load_table6(REF / "ppo2017_table6_atari.csv")["game"].tolist()
    assert len(games) == 49
    assert unregistered_games(games, gymnasium.registry) == []
    assert unregistered_games(["Pong", "NotAGame"], {"ALE/Pong-v5"}) == ["NotAGame"]
    assert task_game("ALE/MontezumaRevenge-v5") == "MontezumaRevenge"


def test_reference_csvs_hold_the_numbers_used_here(refs):
    human = refs["human"].set_index("game")
    assert tuple(human.loc["Pong", ["random", "human"]]) == PONG_H
    assert tuple(human.loc["Breakout", ["random", "human"]]) == BREAKOUT_H
    assert len(human) == 57 and "Pitfall" in human.index  # Atari-57 covers every Table 6 game
    nature = load_random_human(REF / "atari_random_human.csv", "dqn_nature49")
    assert len(nature) == 49 and "Pitfall" not in set(nature["game"])
    assert nature.set_index("game").loc["Pong", "human"] == 9.3
    wins = refs["table2"].set_index("scoring_metric")
    assert wins.loc[LAST_100, ["a2c", "acer", "ppo", "tie"]].tolist() == [1, 28, 19, 1]


# ---------------------------------------------------------------- per run


def test_run_scores_by_hand(study):
    *_, scores = study
    s = scores.set_index(["game", "variant", "seed"])
    assert s.loc[("Pong", "atari_ppo", 0), "score_all"] == pytest.approx((-21 + 2 * 14.6) / 3)
    assert s.loc[("Pong", "atari_ppo", 0), "score_last"] == pytest.approx(14.6)
    assert s.loc[("Breakout", "atari_a2c", 1), "score_all"] == pytest.approx(62 / 3)
    assert s.loc[("Breakout", "atari_a2c", 1), "score_last"] == 16.0
    # Fewer than 100 episodes: all of them, and n_last says how many.
    short = s.loc[("Pong", "atari_a2c", 0)]
    assert (short["score_all"], short["score_last"], short["n_last"], short["n_episodes"]) == (-20.7, -20.7, 4, 4)
    assert s.loc[("Pong", "atari_ppo", 1), "n_last"] == 100 and s.loc[("Pong", "atari_ppo", 1), "n_episodes"] == 150
    # Frames = last global_step of updates.parquet x frame skip; the diverged run stopped at 500 steps.
    assert s.loc[("Pong", "atari_ppo", 0), ["steps", "frames"]].tolist() == [1000, 4000]
    assert s.loc[DIVERGED_KEY, ["steps", "frames", "status"]].tolist() == [500, 2000, "diverged"]
    assert list(scores["algorithm"].unique()) == ["a2c", "ppo"]  # Table 6 order: a2c, acer, ppo


# ---------------------------------------------------------------- Table 6


def test_table6_beside_the_paper(study, refs):
    *_, scores = study
    table = table6(scores, refs["table6"], refs["human"]).set_index(["game", "variant"])
    pong = table.loc[("Pong", "atari_ppo")]
    assert pong["our_mean"] == pytest.approx((14.6 - 3.05) / 2)
    # Two seeds, Student t with 1 degree of freedom: sd = 17.65 / sqrt(2), se = 17.65 / 2 = 8.825,
    # t(0.975, 1) = 12.7062 (tables): half-width 112.13, far wider than the seeds' range.
    assert (pong["our_ci_low"], pong["our_ci_high"]) == (pytest.approx(5.775 - 112.1323, abs=1e-3),
                                                         pytest.approx(5.775 + 112.1323, abs=1e-3))
    # (the mean of 100 episodes of -3.05 is -3.0500000000000007: printed -3.1)
    assert (pong["per_seed"], pong["seed_min"], pong["seed_max"]) == ("s0 14.6, s1 -3.1", pytest.approx(-3.05),
                                                                      pytest.approx(14.6))
    assert pong["our_all_mean"] == pytest.approx(((-21 + 29.2) / 3 + (-21 - 6.1) / 3) / 2)
    assert (pong["paper_mean"], pong["frames"], pong["paper_frames"]) == (20.7, 4000, 40_000_000)
    assert pong["our_hns"] == pytest.approx(0.75)
    assert pong["paper_hns"] == pytest.approx((20.7 + 20.7) / 35.3)
    a2c = table.loc[("Pong", "atari_a2c")]
    assert (a2c["n_seeds"], a2c["n_diverged"], a2c["n_unscored"], a2c["min_last_episodes"]) == (2, 1, 0, 4)
    assert a2c["paper_mean"] == 19.7 and a2c["frames"] == 4000  # the most any seed trained
    assert table.loc[("Breakout", "atari_a2c"), "paper_mean"] == 303.0
    assert list(table.index.get_level_values("game")) == ["Breakout", "Breakout", "Pong", "Pong"]


def test_run_without_episodes_is_unscored(tmp_path, refs):
    runs = tmp_path / "runs"
    write_atari_run(runs, "ALE/Pong-v5", "atari_ppo", 0, [5.0] * 3)
    write_atari_run(runs, "ALE/Pong-v5", "atari_ppo", 1, [])
    episodes, updates, manifests = load(runs)
    scores = run_scores(episodes, manifests, updates)
    assert scores["n_episodes"].tolist() == [3, 0] and math.isnan(scores["score_last"].iloc[1])
    row = table6(scores, refs["table6"]).iloc[0]
    assert (row["our_mean"], row["n_seeds"], row["n_unscored"]) == (5.0, 1, 1)
    assert math.isnan(row["our_ci_low"])  # one scored seed: no interval


# ---------------------------------------------------------------- Table 2


def test_win_counts_with_a_tie(study, refs):
    *_, scores = study
    table = win_counts(scores, refs["table2"], refs["table6"])
    got = {(r.scoring_metric, r.winner): (r.our_wins, r.paper_wins) for r in table.itertuples()}
    assert got == {
        (ALL, "a2c"): (1, 1), (ALL, "ppo"): (1, 30), (ALL, "tie"): (0, 0),
        (LAST_100, "a2c"): (0, 1), (LAST_100, "ppo"): (1, 19), (LAST_100, "tie"): (1, 1),
    }
    last = table[table["scoring_metric"] == LAST_100].set_index("winner")
    # The paper's Table 6 over Pong and Breakout, a2c vs ppo: Pong 19.7 < 20.7, Breakout 303.0 > 274.8.
    assert last["paper_table6_wins"].to_dict() == {"a2c": 1, "ppo": 1, "tie": 0}
    assert table.loc[table["scoring_metric"] == ALL, "paper_table6_wins"].isna().all()
    assert set(table["n_games"]) == {2} and set(table["paper_n_games"]) == {49}
    assert set(table["competitors"]) == {"a2c, ppo"} and set(table["paper_algorithms"]) == {"a2c, acer, ppo"}
    assert table["comparable"].str.startswith(
        "paper counts are over 3 algorithms (a2c, acer, ppo) and 49 games; ours over 2 (a2c, ppo) and 2 game(s)").all()


def test_games_without_every_algorithm_are_skipped(study, refs):
    *_, scores = study
    extra = scores[(scores["game"] == "Pong") & (scores["variant"] == "atari_ppo")].assign(game="Boxing")
    table = win_counts(pd.concat([scores, extra]), refs["table2"], refs["table6"])
    assert set(table["skipped_games"]) == {"Boxing"} and set(table["n_games"]) == {2}


# ---------------------------------------------------------------- human-normalised aggregates


PPO_HNS = [hns(14.6, PONG_H), hns(-3.05, PONG_H), hns(8, BREAKOUT_H), hns(24, BREAKOUT_H)]  # 1, .5, .21875, .7743
A2C_HNS = [hns(-20.7, PONG_H), hns(-11.875, PONG_H), hns(16, BREAKOUT_H), hns(16, BREAKOUT_H)]  # 0, .25, .4965 x2


def test_human_normalized_by_hand(study, refs):
    *_, scores = study
    norm = human_normalized(scores, refs["human"])
    ppo = norm[norm["variant"] == "atari_ppo"].sort_values(["game", "seed"], ascending=[False, True])
    assert ppo["normalized"].tolist() == pytest.approx(PPO_HNS)
    assert PPO_HNS[:3] == pytest.approx([1.0, 0.5, 0.21875])


def test_aggregates_by_hand(study, refs):
    *_, scores = study
    norm = human_normalized(scores, refs["human"])
    agg = aggregate_table(norm, refs["table6"], refs["human"], scores, n_resamples=2000)
    ours = agg[agg["source"] == "ours"].set_index("algorithm")
    # IQM of four runs = mean of the middle two.
    assert ours.loc["ppo", "iqm"] == pytest.approx((0.5 + hns(24, BREAKOUT_H)) / 2)
    assert ours.loc["a2c", "iqm"] == pytest.approx((0.25 + hns(16, BREAKOUT_H)) / 2)
    assert ours.loc["ppo", "mean"] == pytest.approx(np.mean(PPO_HNS))
    # Median over games of per-game means (Pong 0.75, Breakout 0.4965): with two games, their mean.
    assert ours.loc["ppo", "median"] == pytest.approx((0.75 + (PPO_HNS[2] + PPO_HNS[3]) / 2) / 2)
    assert ours.loc["a2c", "optimality_gap"] == pytest.approx(np.mean([1 - v for v in A2C_HNS]))
    assert ours.loc["ppo", "optimality_gap"] == pytest.approx(np.mean([max(0, 1 - v) for v in PPO_HNS]))
    assert ours.loc["ppo", "iqm_ci_low"] <= ours.loc["ppo", "iqm"] <= ours.loc["ppo", "iqm_ci_high"]
    assert (ours.loc["a2c", "n_games"], ours.loc["a2c", "n_runs"], ours.loc["a2c", "n_diverged"]) == (2, 4, 1)
    paper = agg[agg["source"] != "ours"].set_index("algorithm")
    assert paper.loc["ppo", "mean"] == pytest.approx((hns(20.7, PONG_H) + hns(274.8, BREAKOUT_H)) / 2)
    assert paper["iqm_ci_low"].isna().all() and set(paper["n_runs"]) == {2}
    assert agg["human_table"].str.startswith("deepmind/dqn_zoo").all()


# ---------------------------------------------------------------- curves and references


def test_curves_over_frames(study):
    _, episodes, _, manifests, _ = study
    per_seed = seed_curves_frames(episodes, manifests, ["Pong"], n_points=5, smooth=10)
    assert set(per_seed["game"]) == {"Pong"} and per_seed["frames"].max() == 4000.0
    end = per_seed[per_seed["frames"] == 4000.0].set_index(["variant", "seed"])["value"]
    assert (end[("atari_ppo", 0)], end[("atari_ppo", 1)]) == (pytest.approx(14.6), pytest.approx(-3.05))
    assert math.isnan(end[("atari_a2c", 1)])  # diverged at 500 steps = 2000 frames: its curve stops there
    means = mean_curves(per_seed)
    last = means[means["frames"] == 4000.0].set_index("variant")
    assert last.loc["atari_ppo", "mean"] == pytest.approx((14.6 - 3.05) / 2)
    # Only the other a2c seed is left at the end.
    assert (last.loc["atari_a2c", "mean"], last.loc["atari_a2c", "n_runs"]) == (-20.7, 1)
    with pytest.raises(RunDataError, match=r"game\(s\) \['Zaxxon'\] chosen for the curves are not in the study"):
        seed_curves_frames(episodes, manifests, ["Zaxxon"])


def test_references_beside_table6(study, refs):
    *_, scores = study
    rows6 = table6(scores, refs["table6"])
    table = reference_table(rows6, scores, refs["scores"])
    pong_ppo = table[(table["game"] == "Pong") & (table["algorithm"] == "ppo")]
    assert set(pong_ppo["n_refs"]) == {len(pong_ppo)} and len(pong_ppo) == 10  # ppo, ppo2, ppo2_mpi rows
    cleanrl = pong_ppo[pong_ppo["ref_algo"] == "ppo (cleanrl ppo_atari.py, tag pr-424)"].iloc[0]
    assert cleanrl["ref_score"] == 20.36 and cleanrl["ref_metric"] == "last-100 training episodes"
    assert cleanrl["comparable"] == ("env PongNoFrameskip-v4 vs our ALE/Pong-v5; 10M steps (40M frames) vs our 1k "
                                     "agent steps (4k frames); metric: last-100 training episodes (same as ours)")
    sb2 = table[table["ref_algo"] == "a2c (Stable-Baselines 2, zoo hyperparameters)"].iloc[0]
    assert sb2["ref_metric"] == "single-run final-agent eval" and sb2["comparable"].endswith("single run")
    pong_a2c = table[(table["game"] == "Pong") & (table["algorithm"] == "a2c")]
    assert sorted(pong_a2c["ref_score"]) == [1.0, 17.292, 18.65, 18.973]
    assert not table["ref_algo"].str.startswith("acer").any()  # no acer runs, no acer rows
    alone = reference_table(rows6.assign(game="Zaxxon"), scores, refs["scores"]).iloc[0]
    assert alone["comparable"] == NO_REFERENCE and alone["n_refs"] == 0


def test_reported_spread_reads_cleanrl_notes(refs):
    rows = refs["scores"]
    cleanrl = rows[(rows["game"] == "Pong") & (rows["algo"] == "ppo (cleanrl ppo_atari.py, tag pr-424)")].iloc[0]
    sd, n = reported_spread(cleanrl)  # "± 0.20 = std across seeds", rlops's numpy std (ddof 0) over 3 seeds
    assert (sd, n) == (pytest.approx(0.20 * math.sqrt(3 / 2)), 3)
    envpool = rows[(rows["game"] == "Breakout") & (rows["algo"] == "ppo (cleanrl ppo_atari_envpool.py, tag pr-424)")]
    assert reported_spread(envpool.iloc[0]) == (pytest.approx(151.84 * math.sqrt(3 / 2)), 3)
    # baselines ppo2 on the same page: a std but no seed count; the zoo: a std over evaluation episodes.
    ppo2 = rows[rows["algo"] == "ppo (openai/baselines ppo2 cnn, openrlbenchmark runs)"].iloc[0]
    zoo = rows[rows["source"].str.startswith("DLR-RM/rl-baselines3-zoo")].iloc[0]
    assert reported_spread(ppo2) is None and reported_spread(zoo) is None


def _verdict_row(**kw) -> dict:
    # Breakout: paper 274.8, random 1.7 (reference/atari_random_human.csv), so the equivalence range is
    # 274.8 ± 0.25 × 273.1 = 206.525 to 343.075
    row = {"frames": 40_000_000, "n_seeds": 3, "paper_mean": 274.8, "our_ci_low": 230.0, "our_ci_high": 320.0,
           "margin_low": 206.525, "margin_high": 343.075, "diff_ci_low": math.nan}
    return row | kw


def test_equivalence_range_by_hand():
    assert equivalence_range(274.8, 1.7) == (pytest.approx(206.525), pytest.approx(343.075))
    assert equivalence_range(20.7, -20.7) == (pytest.approx(10.35), pytest.approx(31.05))  # Pong: random below zero
    assert equivalence_range(20.7, -20.7, margin=0.1) == (pytest.approx(16.56), pytest.approx(24.84))


def test_verdict_rule():
    assert verdict_line(_verdict_row(), 40e6) == (
        "reproduced: our 95% t interval 230.0 to 320.0 (3 seeds) lies within the paper's value ± 25% of its gain over "
        "random play (206.5 to 343.1); the paper's 274.8 is inside it")
    # within the range but wholly below (or above) the paper's value: still reproduced, at the margin's tolerance
    assert verdict_line(_verdict_row(our_ci_low=250.0, our_ci_high=270.0), 40e6).startswith(
        "reproduced: our 95% t interval 250.0 to 270.0 (3 seeds) lies within")
    assert verdict_line(_verdict_row(our_ci_low=250.0, our_ci_high=270.0), 40e6).endswith("the paper's 274.8 is above it")
    # the range's edges count as inside it
    assert verdict_line(_verdict_row(our_ci_low=206.525, our_ci_high=343.075), 40e6).startswith("reproduced: ")
    # wider than the range on either side: undecided, whether or not the paper's value is inside.
    # Breakout's 2 published seeds (62.1, 118.3) gave -267 to 447 and were called "reproduced" before this rule.
    for low, high, where in ((-267.0, 447.0, "inside"), (200.0, 270.0, "above"), (230.0, 350.0, "inside")):
        line = verdict_line(_verdict_row(our_ci_low=low, our_ci_high=high, n_seeds=2), 40e6)
        assert line == (f"undecided at 2 seeds: our 95% t interval {low:,.1f} to {high:,.1f} (2 seeds) reaches beyond the "
                        f"paper's value ± 25% of its gain over random play (206.5 to 343.1); the paper's 274.8 is {where} it")
    # above the paper's value, however far: reproduced, above the paper
    assert verdict_line(_verdict_row(our_ci_low=300.0, our_ci_high=900.0), 40e6).startswith(
        "reproduced, above the paper: the paper's 274.8 is below our 95% t interval 300.0 to 900.0 (3 seeds)")
    # wholly below the range: not reproduced
    assert verdict_line(_verdict_row(our_ci_low=20.0, our_ci_high=200.0), 40e6) == (
        "not reproduced, below the paper: our 95% t interval 20.0 to 200.0 (3 seeds) lies below the paper's value ± 25% "
        "of its gain over random play (206.5 to 343.1)")
    assert verdict_line(_verdict_row(frames=24_000_000), 40e6) == "no verdict: trained 24M of the paper's 40M frames"
    assert verdict_line(_verdict_row(n_seeds=1), 40e6).startswith("no verdict: 1 scored seed(s), no interval")
    against = _verdict_row(ref_algo="ppo (cleanrl)", ref_mean=414.66, diff_vs_ref=-64.7, diff_ci_low=-300.0,
                           diff_ci_high=170.0)
    assert verdict_line(against, 40e6).endswith(
        "; vs ppo (cleanrl) 414.7: difference -64.7, Welch 95% -300.0 to +170.0, crosses zero: not distinguishable")
    below = against | {"diff_ci_high": -5.0}
    assert verdict_line(below, 40e6).endswith("-300.0 to -5.0, below it")


def test_verdicts_against_cleanrl(study, refs):
    *_, scores = study
    rows6 = table6(scores, refs["table6"])
    # Score the synthetic study as if it had trained the paper's budget, to reach the rule.
    table = verdicts(rows6, scores, refs["scores"], refs["human"], paper_frames=4000).set_index(["game", "variant"])
    pong = table.loc[("Pong", "atari_ppo")]
    assert pong["ref_algo"] == "ppo (cleanrl ppo_atari.py, tag pr-424)" and pong["ref_mean"] == 20.36
    assert (pong["ref_sd"], pong["ref_n"]) == (pytest.approx(0.20 * math.sqrt(1.5)), 3)
    assert pong["diff_vs_ref"] == pytest.approx(5.775 - 20.36)
    # Welch: our variance of the mean 8.825^2 dominates; about 1 degree of freedom, so t(0.975) ~ 12.7.
    assert pong["diff_ci_low"] < -100 and pong["diff_ci_high"] > 90
    # Pong: paper 20.7, random -20.7; the interval over 2 synthetic seeds holds it but spans far more than 10.35 to 31.05
    assert (pong["margin_low"], pong["margin_high"]) == (pytest.approx(10.35), pytest.approx(31.05))
    assert pong["verdict"].startswith("undecided at 2 seeds: our 95% t interval")
    assert "the paper's 20.7 is inside it" in pong["verdict"]
    assert "crosses zero: not distinguishable" in pong["verdict"]
    a2c = table.loc[("Pong", "atari_a2c")]
    assert a2c["ref_algo"] == "" and math.isnan(a2c["diff_vs_ref"])  # no A2C reference states a seed spread


def test_budget_line(study):
    manifests = study[3]
    assert budget_line(manifests).startswith("REDUCED BUDGET: 1k agent steps (4k frames) per run, 2 seed(s)")
    assert budget_line(manifests, ["REDUCED BUDGET: 2 games"]) == "REDUCED BUDGET: 2 games"
    full = manifests.assign(reduced=False, total_steps=10_000_000)
    assert budget_line(full, ["paper protocol"]) == "paper protocol"


# ---------------------------------------------------------------- bad input


def test_unknown_algorithm_names_manifest_and_field(tmp_path):
    run_dir = write_atari_run(tmp_path / "runs", "ALE/Pong-v5", "atari_dqn", 0, [1.0], algorithm="dqn")
    _, _, manifests = load_study(tmp_path / "runs", [run_dir])
    with pytest.raises(RunDataError) as err:
        check_runs(manifests)
    message = str(err.value)
    assert "\n" not in message and str(run_dir / "manifest.json") in message
    assert "field 'algorithm' is 'dqn'; expected one of ['a2c', 'acer', 'ppo'" in message


def test_bad_frame_skip_names_manifest_and_field(tmp_path):
    run_dir = write_atari_run(tmp_path / "runs", "ALE/Pong-v5", "atari_ppo", 0, [1.0], frame_skip="4")
    _, _, manifests = load_study(tmp_path / "runs", [run_dir])
    expected = r"seed0/manifest\.json: field 'env_protocol\.frame_skip' must be an integer"
    with pytest.raises(RunDataError, match=expected):
        attach_env_protocol(check_runs(manifests))


def test_game_missing_from_a_reference_table_names_file_and_field(study, refs):
    *_, scores = study
    hero = scores.assign(game="Hero", task="ALE/Hero-v5")  # Atari-57 has Hero; Table 6 does not
    with pytest.raises(RunDataError, match=r"ppo2017_table6_atari\.csv: field 'game' has no row 'Hero'"):
        table6(hero, refs["table6"])
    nature = load_random_human(REF / "atari_random_human.csv", "dqn_nature49")
    pitfall = scores.assign(game="Pitfall", task="ALE/Pitfall-v5")
    with pytest.raises(RunDataError, match=r"atari_random_human\.csv: field 'game' has no row 'Pitfall'"):
        human_normalized(pitfall, nature)


# ---------------------------------------------------------------- command line


def _script():
    spec = importlib.util.spec_from_file_location("atari_report", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


OUTPUTS = ("atari_verdicts.csv", "atari_verdicts.md", "atari_table6.csv", "atari_table6.md", "atari_runs.csv",
           "atari_runs.md", "atari_table2.csv", "atari_table2.md", "atari_aggregate.csv", "atari_aggregate.md",
           "atari_curves.png", "atari_curves.csv", "atari_references.csv", "atari_references.md")
BUDGET = "REDUCED BUDGET: unit-test budget"


def test_cli_end_to_end(study, tmp_path):
    runs = study[0]
    out = tmp_path / "report"
    argv = ["--runs", str(runs), "--reference-dir", str(REF), "--out-dir", str(out), "--budget-note", BUDGET,
            "--n-resamples", "500", "--curve-points", "5"]
    assert _script().main(argv) == 0
    for name in OUTPUTS:
        assert (out / name).is_file(), name
        if name.endswith(".md"):
            assert f"- {BUDGET}" in (out / name).read_text()
        if name.endswith(".csv"):
            assert set(pd.read_csv(out / name)["budget"]) == {BUDGET}, name
    assert (out / "atari_curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    t6 = pd.read_csv(out / "atari_table6.csv").set_index(["game", "variant"])
    assert t6.loc[("Pong", "atari_ppo"), "our_mean"] == pytest.approx(5.775)
    assert t6.loc[("Breakout", "atari_a2c"), ["frames", "paper_mean"]].tolist() == [4000, 303.0]
    t2 = pd.read_csv(out / "atari_table2.csv", keep_default_na=False)
    tie = t2[(t2["scoring_metric"] == LAST_100) & (t2["winner"] == "tie")].iloc[0]
    assert (tie["our_wins"], tie["paper_wins"]) == (1, 1)
    agg = pd.read_csv(out / "atari_aggregate.csv")
    assert agg.loc[(agg["source"] == "ours") & (agg["algorithm"] == "ppo"), "iqm"].iloc[0] == pytest.approx(
        (0.5 + hns(24, BREAKOUT_H)) / 2)
    assert "Random and human scores (atari57): deepmind/dqn_zoo" in (out / "atari_aggregate.md").read_text()
    assert len(pd.read_csv(out / "atari_references.csv")) == 28  # Pong/Breakout x ppo (10 each) and a2c (4 each)
    lines = pd.read_csv(out / "atari_verdicts.csv").set_index(["game", "variant"])
    assert lines.loc[("Pong", "atari_ppo"), "verdict"] == "no verdict: trained 4k of the paper's 40M frames"
    runs_table = pd.read_csv(out / "atari_runs.csv")
    assert len(runs_table) == 8 and runs_table["score_all"].notna().all()
    curves = pd.read_csv(out / "atari_curves.csv")
    assert set(curves["run_id"]) == {*runs_table["run_id"], "mean"}


def test_cli_bad_manifest_is_one_line_error(tmp_path):
    write_atari_run(tmp_path / "runs", "ALE/Pong-v5", "atari_dqn", 0, [1.0], algorithm="dqn")
    result = subprocess.run(
        [sys.executable, str(SCRIPT), "--runs", str(tmp_path / "runs"), "--reference-dir", str(REF),
         "--out-dir", str(tmp_path / "out")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("atari_report: error: manifest ")
    assert "atari_dqn/seed0/manifest.json: field 'algorithm' is 'dqn'" in lines[0]


def test_front_page_shows_published_atari_runs(tmp_path):
    spec = importlib.util.spec_from_file_location("front_page", REPO / "workflow" / "scripts" / "front_page.py")
    front_page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(front_page)
    assert front_page.atari_beside_paper(tmp_path) is None  # nothing published yet
    build_study(tmp_path / "atari" / "paper")  # the published layout: published/atari/paper/runs
    note, table = front_page.atari_beside_paper(tmp_path)
    rows = front_page.cells_of(table.splitlines())
    assert rows[0] == ["game", "algorithm", "seeds: last-100 score", "mean (95% t interval)", "paper", "verdict"]
    pong_ppo = next(r for r in rows if r[:2] == ["Pong", "PPO"])
    assert pong_ppo[2:5] == ["s0 14.6, s1 -3.1", "5.8 (-106.4 to 117.9)", "20.7"]
    assert pong_ppo[5] == "no verdict: trained 4k of the paper's 40M frames"
    assert len(rows) == 2 + 4 and note.startswith("8 of the 18 runs of ./repro atari-three published")
    assert "8.0 job-hours of training" in note  # the manifests' wall_seconds, 3600 s each


def test_curves_figure_draws_the_paper_beside_runs_at_its_budget(study, refs, tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    from analysis.atari_curves import plot_atari_curves
    _, episodes, _, manifests, scores = study
    per_seed = seed_curves_frames(episodes, manifests, ["Pong", "Breakout"], n_points=5)
    rows6 = table6(scores, refs["table6"])
    drawn = {}
    original = Figure.savefig

    def keep(fig, *args, **kwargs):  # the figure's dashed lines, read as it is written
        drawn["dashed"] = sorted(round(line.get_ydata()[0], 1) for ax in fig.axes for line in ax.get_lines()
                                 if line.get_linestyle() == "--")
        return original(fig, *args, **kwargs)

    monkeypatch.setattr(Figure, "savefig", keep)
    plot_atari_curves(per_seed, tmp_path / "none.png", "t", rows6[rows6["frames"] >= rows6["paper_frames"]])
    assert drawn["dashed"] == []  # 4k frames: no run at the paper's budget
    plot_atari_curves(per_seed, tmp_path / "all.png", "t", rows6)
    assert drawn["dashed"] == [19.7, 20.7, 274.8, 303.0]  # Table 6: A2C and PPO on Pong and Breakout
