"""The RLHF report's analysis (analysis/rlhf.py) on synthetic runs whose answers are known.

The synthetic study: gold = G0 + d(2 − log d), Gao's RL form with α = 2, β = 1 (peak at d = e, gold gain e), where
d = √KL grows by 0.1 per update. clip_0.2 at reference β = 0 follows it to d = 6; at β = 0.1 it follows the same
curve but stops at d = 1.5 (early stopping on the frontier); no_clip at β = 0.1 lies 1 above the curve (a
penalty that moves the frontier up). Best-of-n follows d(1.5 − 0.25 d).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from analysis import rlhf

G0 = -1.0
UPDATES = 61


def write_rlhf_run(runs: Path, cell: str, seed: int, table: pd.DataFrame, variant_file: str, beta: float | None,
                   algorithm: str = "ppo", status: str = "completed") -> Path:
    run_dir = runs / "rlhf_grammar" / cell / f"seed{seed}"
    run_dir.mkdir(parents=True)
    table.to_parquet(run_dir / "updates.parquet", index=False)
    manifest = {"run_id": f"rlhf_grammar/{cell}/seed{seed}", "task": "rlhf_grammar", "variant": cell,
                "variant_label": f"{variant_file}" + ("" if beta is None else f", ref β = {beta:g}"), "seed": seed,
                "status": status, "variant_file": variant_file, "reference_beta": beta, "blocks": ["test"],
                "config": {"algorithm": algorithm, "reference_kl": {"beta": beta or 0.0}}}
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

    peak = rlhf.peak_final_table(records, manifests, n_resamples=500).set_index("cell")
    ref0 = peak.loc["clip_0.2-ref0"]
    assert ref0["n_runs"] == 3 and ref0["gold_start"] == pytest.approx(G0)
    assert ref0["peak_gold"] == pytest.approx(G0 + math.e, abs=0.01)  # the curve is flat at its peak: smoothing costs little
    assert ref0["peak_sqrt_kl"] == pytest.approx(math.e, abs=0.15)
    assert ref0["peak_ci_low"] < ref0["peak_gold"] < ref0["peak_ci_high"]  # seeds differ by ±0.05
    assert ref0["final_gold"] == pytest.approx(float(np.mean(curve(0.1 * np.arange(56, 61)))), abs=1e-9)

    frontier = rlhf.frontier_table(records, manifests, n_resamples=500).set_index("variant_file")
    on = frontier.loc["clip_0.2"]
    assert abs(on["matched_kl_gap"]) < 0.1 and on["gap_ci_low"] < 0 < on["gap_ci_high"]
    assert on["verdict"] == "on the β = 0 frontier; stops earlier"
    assert on["stop_sqrt_kl"] == pytest.approx(1.5) and on["ref0_peak_sqrt_kl"] == pytest.approx(math.e, abs=0.15)
    up = frontier.loc["no_clip"]
    assert up["matched_kl_gap"] == pytest.approx(1.0, abs=0.1) and up["gap_ci_low"] > 0
    assert up["verdict"] == "moves the frontier up; stops earlier"


def test_a_diverged_run_is_counted_and_left_out(tmp_path):
    runs = build_study(tmp_path)
    d = 0.1 * np.arange(10)
    write_rlhf_run(runs, "clip_0.2-ref0", 3, rl_table(d, np.full(10, 99.0)), "clip_0.2", 0.0, status="diverged")
    records, manifests = rlhf.load_runs(runs)
    row = rlhf.peak_final_table(records, manifests, n_resamples=200).set_index("cell").loc["clip_0.2-ref0"]
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
