"""The RLHF report's analysis (analysis/rlhf.py) on synthetic runs whose answers are known.

The synthetic study: gold = G0 + d(2 − log d), Gao's RL form with α = 2, β = 1 (peak at d = e, gold gain e), where
d = √KL grows by 0.1 per update. clip_0.2 at reference β = 0 follows it to d = 6; at β = 0.1 it follows the same
curve but stops at d = 1.5 (early stopping on the frontier); no_clip at β = 0.1 lies 1 above the curve (a
penalty that moves the frontier up). Best-of-n follows d(1.5 − 0.25 d). Seeds differ by ±0.05 around the curves.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import rlhf
from analysis.stats import t_interval

G0 = -1.0
UPDATES = 61


def write_rlhf_run(runs: Path, cell: str, seed: int, table: pd.DataFrame, variant_file: str, beta: float | None,
                   algorithm: str = "ppo", status: str = "completed", models: dict | None = None) -> Path:
    run_dir = runs / "rlhf_grammar" / cell / f"seed{seed}"
    run_dir.mkdir(parents=True)
    table.to_parquet(run_dir / "updates.parquet", index=False)
    manifest = {"run_id": f"rlhf_grammar/{cell}/seed{seed}", "task": "rlhf_grammar", "variant": cell,
                "variant_label": f"{variant_file}" + ("" if beta is None else f", ref β = {beta:g}"), "seed": seed,
                "status": status, "variant_file": variant_file, "reference_beta": beta, "blocks": ["test"],
                "config": {"algorithm": algorithm, "reference_kl": {"beta": beta or 0.0}}}
    if models is not None:  # what a real run records of its starting models, with pipeline seeds
        manifest.update(pipeline_seeds=True, models_key=f"key{seed}", models=models)
        manifest["config"]["reward_model"] = {"pairs": 4000, "label_noise": 0.1, "model": None}
    (run_dir / "manifest.json").write_text(json.dumps(manifest))
    return run_dir


def rl_table(d: np.ndarray, gold: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame({"update": np.arange(len(d)), "proxy_reward": 0.5 * d, "gold_reward": gold,
                         "ref_kl": d ** 2})


def curve(d):
    return G0 + rlhf.gao_rl(d, 2.0, 1.0)


def build_study(root: Path) -> Path:
    runs = root / "runs"
    for seed in range(3):
        wiggle = 0.05 * (seed - 1)  # seeds differ a little, symmetrically around the curve
        d0 = 0.1 * np.arange(UPDATES)
        write_rlhf_run(runs, "clip_0.2-ref0", seed, rl_table(d0, curve(d0) + wiggle), "clip_0.2", 0.0)
        write_rlhf_run(runs, "no_clip-ref0", seed, rl_table(d0, curve(d0) + wiggle), "no_clip", 0.0)
        d1 = np.minimum(0.1 * np.arange(UPDATES), 1.5)
        write_rlhf_run(runs, "clip_0.2-ref0.1", seed, rl_table(d1, curve(d1) - wiggle), "clip_0.2", 0.1)
        write_rlhf_run(runs, "no_clip-ref0.1", seed, rl_table(d1, curve(d1) + np.minimum(d1 / 0.2, 1.0) - wiggle),
                       "no_clip", 0.1)
        ns = np.array([1, 2, 4, 8, 16, 32, 64])
        kl = np.log(ns) - (ns - 1) / ns
        write_rlhf_run(runs, "best_of_n", seed, pd.DataFrame({
            "n": ns, "proxy_reward": np.sqrt(kl), "gold_reward": G0 + rlhf.gao_bon(np.sqrt(kl), 1.5, 0.25) + wiggle,
            "ref_kl": kl}), "best_of_n", None, algorithm="best_of_n")
    return runs


def test_gao_fits_recover_known_parameters():
    rng = np.random.default_rng(0)
    d = np.linspace(0, 6, 200)
    fit = rlhf.fit_gao(d, rlhf.gao_rl(d, 3.0, 1.5), "rl")
    assert fit["alpha"] == pytest.approx(3.0, abs=1e-9) and fit["beta"] == pytest.approx(1.5, abs=1e-9)
    assert fit["r2"] == pytest.approx(1.0) and fit["d_peak_fit"] == pytest.approx(math.exp(3.0 / 1.5 - 1))
    assert fit["R_peak_fit"] == pytest.approx(1.5 * math.exp(1.0))  # d(α − β log d) at d = e^(α/β − 1) is β·d
    noisy = rlhf.fit_gao(d, rlhf.gao_rl(d, 3.0, 1.5) + rng.normal(0, 0.2, d.size), "rl")
    assert noisy["alpha"] == pytest.approx(3.0, abs=0.15) and noisy["beta"] == pytest.approx(1.5, abs=0.1)
    assert 0.8 < noisy["r2"] < 1.0
    bon = rlhf.fit_gao(d, rlhf.gao_bon(d, 1.2, 0.3), "bon")
    assert bon["alpha"] == pytest.approx(1.2) and bon["beta"] == pytest.approx(0.3)
    assert bon["d_peak_fit"] == pytest.approx(2.0) and bon["R_peak_fit"] == pytest.approx(1.2 * 2 - 0.3 * 4)
    short = rlhf.fit_gao(d[d <= 1], rlhf.gao_rl(d[d <= 1], 3.0, 1.5), "rl")  # the data stop before the peak at e
    assert short["beta"] == pytest.approx(1.5) and math.isnan(short["d_peak_fit"])  # not extrapolated
    rising = rlhf.fit_gao(d, 0.5 * d, "bon")  # no over-optimisation: β = 0, no peak
    assert rising["beta"] == pytest.approx(0.0, abs=1e-9) and math.isnan(rising["d_peak_fit"])
    assert math.isnan(rlhf.fit_gao([0.0, 1.0], [0.0, 1.0], "rl")["alpha"])  # two points cannot fix two parameters
    with pytest.raises(ValueError):
        rlhf.fit_gao(d, d, "linear")


def test_peak_and_final_by_hand():
    gold = np.array([0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    d = np.arange(10) * 0.5
    records = rl_table(d, gold).assign(run_id="r", cell="c", status="completed", algorithm="ppo", sqrt_kl=d)
    (row,) = rlhf.run_summaries(records).to_dict("records")
    # centred rolling mean over 5 (fewer at the ends): update 1 averages updates 0..3 = 5/4, the largest
    assert row["peak_gold"] == pytest.approx(1.25) and row["peak_update"] == 1 and row["peak_sqrt_kl"] == 0.5
    assert row["final_gold"] == pytest.approx(0.0) and row["final_sqrt_kl"] == pytest.approx(np.mean(d[-5:]))
    assert row["gold_start"] == 0.0


def test_report_tables_on_the_synthetic_study(tmp_path):
    records, manifests = rlhf.load_runs(build_study(tmp_path))
    fits = rlhf.fits_table(records, manifests).set_index(["cell", "reward"])
    gold = fits.loc[("clip_0.2-ref0", "gold")]
    assert gold["alpha"] == pytest.approx(2.0, abs=1e-6) and gold["beta"] == pytest.approx(1.0, abs=1e-6)
    assert gold["n_points"] == 3 * UPDATES and gold["d_peak_fit"] == pytest.approx(math.e, rel=1e-5)
    bon = fits.loc[("best_of_n", "gold")]
    assert bon["form"] == rlhf.BON_FORM and bon["alpha"] == pytest.approx(1.5) and bon["beta"] == pytest.approx(0.25)

    peak = rlhf.peak_final_table(records, manifests).set_index("cell")
    ref0 = peak.loc["clip_0.2-ref0"]
    assert ref0["n_runs"] == 3 and ref0["gold_start"] == pytest.approx(G0)
    assert ref0["peak_gold"] == pytest.approx(G0 + math.e, abs=0.01)  # the curve is flat at its peak: smoothing costs little
    assert ref0["peak_sqrt_kl"] == pytest.approx(math.e, abs=0.15)
    # Student-t over the 3 seeds, whose peaks differ by exactly the wiggle −0.05, 0, +0.05: sd 0.05, t(0.975, 2) = 4.303
    half = 4.302653 * 0.05 / math.sqrt(3)
    assert ref0["peak_ci_high"] - ref0["peak_gold"] == pytest.approx(half, rel=1e-5)
    assert ref0["peak_gold"] - ref0["peak_ci_low"] == pytest.approx(half, rel=1e-5)
    assert len(ref0["peak_per_seed"].split(", ")) == 3
    assert ref0["final_gold"] == pytest.approx(float(np.mean(curve(0.1 * np.arange(56, 61)))), abs=1e-9)
    assert math.isnan(ref0["heldout_final_gold"])  # these runs have no held-out evaluations

    frontier = rlhf.frontier_table(records, manifests).set_index("variant_file")
    on = frontier.loc["clip_0.2"]
    # paired by seed: seed k's β > 0 run lies −wiggle from the curve, its β = 0 frontier +wiggle: gaps ≈ +0.1, 0, −0.1
    assert on["n_pairs"] == 3 and abs(on["matched_kl_gap"]) < 0.05 and on["gap_ci_low"] < 0 < on["gap_ci_high"]
    assert on["verdict"] == "on the β = 0 frontier; stops earlier"
    assert on["stop_sqrt_kl"] == pytest.approx(1.5) and on["ref0_peak_sqrt_kl"] == pytest.approx(math.e, abs=0.15)
    up = frontier.loc["no_clip"]
    assert up["matched_kl_gap"] == pytest.approx(1.0, abs=0.15) and up["gap_ci_low"] > 0
    assert up["verdict"] == "moves the frontier up; stops earlier"
    gaps = np.array([float(g) for g in up["gap_per_seed"].split(", ")])
    assert (up["matched_kl_gap"], up["gap_ci_low"], up["gap_ci_high"]) == pytest.approx(tuple(t_interval(gaps)), abs=0.01)


def test_a_diverged_run_is_counted_and_left_out(tmp_path):
    runs = build_study(tmp_path)
    d = 0.1 * np.arange(10)
    write_rlhf_run(runs, "clip_0.2-ref0", 3, rl_table(d, np.full(10, 99.0)), "clip_0.2", 0.0, status="diverged")
    records, manifests = rlhf.load_runs(runs)
    row = rlhf.peak_final_table(records, manifests).set_index("cell").loc["clip_0.2-ref0"]
    assert row["n_runs"] == 4 and row["n_diverged"] == 1 and row["peak_gold"] < 2


def test_a_bad_run_file_is_one_line_naming_it(tmp_path, capsys):
    import importlib.util

    runs = build_study(tmp_path)
    bad = runs / "rlhf_grammar" / "no_clip-ref0" / "seed1" / "updates.parquet"
    bad.write_bytes(b"not parquet")
    spec = importlib.util.spec_from_file_location("rlhf_report", Path(__file__).resolve().parents[2]
                                                  / "workflow" / "scripts" / "rlhf_report.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--runs", str(runs), "--out-dir", str(tmp_path / "out"), "--n-resamples", "200"]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(bad) in err and err.startswith("rlhf_report: error:")


def test_seed_gap_by_hand():
    """One seed: a frontier through (d, gold) = (0.5, 1) and (1.5, 3) (two bins, one point each), and a β > 0 run at
    d = 1 with gold 2.5: the frontier there is 2 (halfway), so the gap is +0.5."""
    ref = pd.DataFrame({"sqrt_kl": [0.5, 1.5], "gold_reward": [1.0, 3.0]})
    run = pd.DataFrame({"sqrt_kl": [1.0, 2.0], "gold_reward": [2.5, 9.0]})  # d = 2 lies beyond the frontier: left out
    old_bins = rlhf.FRONTIER_BINS
    try:
        rlhf.FRONTIER_BINS = 2  # bins [0, 0.75), [0.75, 1.5]
        gap, share = rlhf.seed_gap(ref, run)
        out = rlhf.matched_kl_gap({0: ref, 1: ref}, {0: run})  # only seed 0 is run at both β
    finally:
        rlhf.FRONTIER_BINS = old_bins
    assert gap == pytest.approx(0.5) and share == 0.5
    assert out["n_pairs"] == 1 and out["matched_kl_gap"] == pytest.approx(0.5) and out["gap_per_seed"] == "+0.50"
    assert math.isnan(out["gap_ci_low"])  # one pair: a point, no interval
    assert rlhf.verdict(out["gap_ci_low"], out["gap_ci_high"], 1.0, 2.0) == \
        "no interval (fewer than two seeds run at both β); stops earlier"


def hacked_run(runs: Path, seed: int) -> None:
    """A β = 0 run that hacks: gold peaks at update 3 and falls while the proxy keeps rising; it repeats and breaks
    the grammar more and more; held-out gold every 2 updates; samples at every update."""
    u = np.arange(9)
    gold = np.array([0.0, 1.0, 2.0, 3.0, 2.0, 1.0, 0.0, -1.0, -2.0]) + 0.1 * seed
    table = pd.DataFrame({"update": u, "proxy_reward": 0.5 * u, "gold_reward": gold, "ref_kl": (0.5 * u) ** 2,
                          "violations": 0.5 * u, "repeats": 0.25 * u, "grammatical_rate": 1 - u / 8,
                          "entropy": 1.0 - 0.1 * u, "response_length": 8.0 + u,
                          "heldout_gold_reward": np.where(u % 2 == 0, gold - 0.5, np.nan)})
    table.loc[8, "heldout_gold_reward"] = -2.5 + 0.1 * seed
    models = {"rm_accuracy_labels": 0.7 + 0.01 * seed, "rm_accuracy_gold": 0.8 + 0.02 * seed,
              "rm_gold_correlation": 0.85, "sft_gold_mean": -1.0}
    run_dir = write_rlhf_run(runs, "clip_0.2-ref0", seed, table, "clip_0.2", 0.0, models=models)
    pd.DataFrame([{"update": k, "index": i, "prompt": "^abc", "response": f"u{k}i{i}$", "proxy_reward": 0.5 * k,
                   "gold_reward": gold[k], "violations": 0.0, "repeats": 0.0}
                  for k in u for i in range(3)]).to_parquet(run_dir / "samples.parquet", index=False)


def test_the_hacking_on_the_page(tmp_path):
    runs = tmp_path / "runs"
    for seed in range(3):
        hacked_run(runs, seed)
    records, manifests = rlhf.load_runs(runs)
    assert manifests["pipeline_seeds"].all() and "whole pipeline" in rlhf.seeds_note(manifests)

    samples = rlhf.sample_table(records, manifests)
    # seed 0; the smoothed proxy peaks at the last update (8), smoothed gold at 3 (2, 3, 2 around it); 2 samples each
    assert samples["seed"].eq(0).all() and len(samples) == 3 * rlhf.SAMPLES_SHOWN
    at = samples.groupby("point")["sample_update"].first().to_dict()
    assert at == {"proxy peak": 8, "gold peak": 3, "end": 8}
    assert samples.loc[samples["point"] == "gold peak", "response"].tolist() == ["u3i0$", "u3i1$"]

    diag = rlhf.diagnostics_table(records, manifests).set_index("cell").loc["clip_0.2-ref0"]
    assert diag["violations_start"] == 0 and diag["violations_at_gold_peak"] == 1.5  # 0.5 × update 3
    assert diag["violations_final"] == pytest.approx(0.5 * np.mean([4, 5, 6, 7, 8]))  # the last 5 updates
    # held-out gold: update 0, the evaluation nearest update 3 (2 and 4 are equally near: the first), and the last
    assert diag["heldout_gold_reward_start"] == pytest.approx(-0.5 + 0.1)  # mean over seeds of −0.5 + 0.1·seed
    assert diag["heldout_gold_reward_at_gold_peak"] == pytest.approx(1.5 + 0.1)
    assert diag["heldout_gold_reward_final"] == pytest.approx(-2.5 + 0.1)

    peak = rlhf.peak_final_table(records, manifests).set_index("cell").loc["clip_0.2-ref0"]
    assert peak["heldout_final_gold"] == pytest.approx(-2.4)
    assert (peak["heldout_final_ci_low"], peak["heldout_final_ci_high"]) == pytest.approx(
        tuple(t_interval(np.array([-2.5, -2.4, -2.3])))[1:])

    rm = rlhf.reward_model_table(manifests).iloc[0]
    assert rm["n_models"] == 3 and rm["seeds"] == "0, 1, 2" and rm["reward_model"].startswith("4000 pairs")
    assert rm["rm_accuracy_gold"] == pytest.approx(0.82)
    assert rm["rm_accuracy_gold_ci_high"] - rm["rm_accuracy_gold"] == pytest.approx(4.302653 * 0.02 / math.sqrt(3), rel=1e-5)
    # seed 0's model built again on another processor: its correlation differs in the last bits; still 3 models
    rebuilt = manifests[manifests["seed"] == 0].iloc[[0]].assign(rm_gold_correlation=lambda m: m["rm_gold_correlation"] + 6e-8)
    again = rlhf.reward_model_table(pd.concat([manifests, rebuilt], ignore_index=True)).iloc[0]
    assert again["n_models"] == 3 and again["rm_accuracy_gold"] == pytest.approx(0.82)
    assert again["rm_accuracy_gold_ci_high"] == pytest.approx(rm["rm_accuracy_gold_ci_high"])
    path = rlhf.plot_diagnostics(records, manifests, tmp_path / "diag.png", "test")
    assert path.stat().st_size > 0
