"""The RLHF study's analysis (experiments/studies/rlhf.yaml, ppo/rlhf): over-optimisation against the KL to the
reference, Gao et al.'s functional forms, peak and final gold reward, and whether a reference-KL penalty moves
the gold-vs-KL frontier or only stops earlier on it.

d = √KL(π‖π_ref), with KL the exact KL per response (summed over its tokens, averaged over the batch: column
``ref_kl`` of updates.parquet). Gao, Schulman & Hilton 2022 ("Scaling Laws for Reward Model Overoptimization")
fit the reward gained over the initial policy as R(d) = d(α − β log d) for RL and R(d) = d(α − β d) for
best-of-n; both are linear in (α, β), so the fits here are ordinary least squares without intercept.

Intervals over seeds are Student-t (analysis.stats.t_interval: n − 1 degrees of freedom), never a percentile
bootstrap, which at 2–3 seeds is the range of the seeds. What the seeds vary is read from the manifests: with
``pipeline_seeds`` the grammar, SFT model, reward model and RL sampling; without, RL sampling only. The report also
shows the over-optimisation itself: sampled responses where the proxy and the gold reward peak and at the end, the
hack diagnostics over updates, the reward models' held-out accuracy, and gold on the runs' held-out prompt sets.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from analysis.style import new_figure, variant_colors
from analysis.io import ReportError, RunDataError, find_run_dirs, read_manifest, read_parquet
from analysis.stats import t_interval

RL_COLUMNS = ("update", "proxy_reward", "gold_reward", "ref_kl")
SAMPLE_COLUMNS = ("index", "prompt", "response", "proxy_reward", "gold_reward")
SAMPLES_SHOWN = 2  # sampled responses shown per setting at each point (the first of the batch)
# the hack diagnostics over updates (updates.parquet, ppo.rlhf.train.batch_record), and gold on the held-out prompts
DIAGNOSTICS = {"violations": "ungrammatical transitions per response", "repeats": "word repeats beyond 2 per response",
               "grammatical_rate": "share of responses with no violation", "entropy": "policy entropy per token (nats)",
               "response_length": "response length (tokens, EOS included)",
               "heldout_gold_reward": "gold on the held-out prompts"}
RM_COLUMNS = ("rm_accuracy_labels", "rm_accuracy_gold", "rm_gold_correlation", "sft_gold_mean")
BON_COLUMNS = ("n", "proxy_reward", "gold_reward", "ref_kl")
SMOOTH = 5  # updates in the centred rolling mean of gold before its peak is taken (a batch mean is noisy)
FINAL = 5  # last updates averaged into the final gold
FRONTIER_BINS = 12  # equal-width bins of d on which the β = 0 runs' gold-vs-d curve is averaged
RL_FORM, BON_FORM = "RL: d(α − β log d)", "best-of-n: d(α − β d)"

PEAK_NOTE = (f"Per run: peak_gold = the largest value of gold reward (the batch's mean) after a centred "
             f"rolling mean over {SMOOTH} updates, at peak_update, with peak_sqrt_kl = √KL(π‖π_ref) there; final_gold "
             f"= mean of the last {FINAL} updates' gold (the trained policy's last batches), final_sqrt_kl likewise; "
             "heldout_final_gold = gold of the last evaluation on the run's fixed held-out prompts (blank for runs "
             "without them). Best-of-n: peak = the best n, final = the largest n. Then the mean over the n completed "
             "seeds with a 95% Student-t interval (n − 1 degrees of freedom: at 2 seeds its half-width is 12.7 "
             "standard errors, at 3 seeds 4.3; analysis.stats.t_interval; one run gives none), and each seed's value "
             "(per_seed). gold_start = gold of the SFT policy (update 0). Diverged runs (non-finite parameters) are "
             "counted in n_diverged and left out of the means.")
FIT_NOTE = ("Gao et al. 2022's forms fitted by least squares to the reward gained over the SFT policy (each run's "
            "value minus its update-0 value; best-of-n: minus n = 1) against d = √KL(π‖π_ref), every update of every "
            "seed pooled. r2 = 1 − SS_res/SS_tot. d_peak_fit, R_peak_fit: where the fitted curve peaks (RL: "
            "d = exp(α/β − 1); best-of-n: d = α/(2β)); blank when β ≤ 0 or the peak lies beyond d_max (the fitted curve "
            "still rises over the data).")
FRONTIER_RULE = (
    f"Rule: for each surrogate with runs at reference β = 0 and β > 0, paired by seed (the two runs of a seed start "
    f"from the same grammar and models): the β = 0 run defines the frontier, its gold reward against "
    f"d = √KL(π‖π_ref) averaged in {FRONTIER_BINS} equal-width bins of d, each placed at its points' mean d, and "
    "interpolated linearly between them; the seed's gap = mean over the β > 0 run's updates (those with d inside the "
    "frontier's range; share_in_range) of (its gold − the frontier's gold at its d), i.e. gold at matched KL. "
    "matched_kl_gap = mean of the seeds' gaps over the n_pairs seeds run at both β, with a 95% Student-t interval "
    "(n_pairs − 1 degrees of freedom; analysis.stats.t_interval). Verdict: 'moves the frontier up' if the whole "
    "interval is above 0, 'moves the frontier down' if below 0, otherwise 'on the β = 0 frontier' (not "
    "distinguishable from it at this number of seeds); then 'stops earlier' if the β > 0 runs end at a smaller d "
    "than where the β = 0 runs' gold peaks (stop_sqrt_kl < ref0_peak_sqrt_kl). Gao et al. report that a KL penalty "
    "acts like early stopping: on the frontier, stopping earlier.")
SAMPLES_NOTE = (
    f"Per setting, its lowest completed seed: the first {SAMPLES_SHOWN} sampled responses of the batch (samples.parquet) "
    f"at three points of the run: where the proxy reward peaks and where the gold reward peaks (the {SMOOTH}-update "
    "centred rolling mean of the batch's mean, as peak_gold), and the last update (best-of-n: the n where each peaks, "
    "and the largest n). sample_update is the recorded update nearest the point (runs that keep samples every update: "
    "the point itself). Text: '^' starts the prompt, each word a letter, '$' is EOS; a response without '$' was cut at "
    "the maximum length. proxy_reward and gold_reward are the response's own; violations are ungrammatical "
    "transitions, repeats a word's occurrences beyond the two that earn its value.")
DIAGNOSTICS_NOTE = (
    "Per setting, the mean over its completed seeds of each hack diagnostic of the batch (updates.parquet) at update "
    f"0 (the SFT policy), at the update where the run's smoothed gold peaks, and over the last {FINAL} updates; "
    "heldout_gold_reward: gold on the run's fixed held-out prompts (the evaluation nearest each point; the last one "
    "for final). " + "; ".join(f"{k}: {v}" for k, v in DIAGNOSTICS.items()) + ".")
REWARD_MODEL_NOTE = (
    "Per reward-model setting (pairs, size, label noise), over the distinct reward models its runs started from "
    "(n_models: one per seed with pipeline seeds, else one): accuracy on held-out pairs (max(256, pairs/4) fresh "
    "pairs of SFT responses, labelled like the training pairs; ppo.rlhf.pretrain.train_reward_model) against the "
    "noisy labels (rm_accuracy_labels) and against the gold reward's order (rm_accuracy_gold, gold ties left out), "
    "the correlation of the normalised score with gold on SFT samples, and the SFT policy's mean gold. Mean over the "
    "models with a 95% Student-t interval (none for one model).")


# ---------------------------------------------------------------- loading
def load_runs(runs: Path, manifest_files: Sequence[Path] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(records, manifests): every run's updates.parquet with its run columns prepended, one row per run.

    records has ``run_id, cell, label, variant_file, reference_beta, algorithm, seed, status`` and then the
    updates columns (``n`` instead of ``update`` for best-of-n). manifests also has what the run started from:
    ``pipeline_seeds``, ``models_key``, the reward model's settings and its measures (RM_COLUMNS). A missing or
    malformed file is a RunDataError naming it."""

    dirs = find_run_dirs(runs) if manifest_files is None else sorted(Path(m).parent for m in manifest_files)
    rows, tables = [], []
    for run_dir in dirs:
        manifest = read_manifest(run_dir / "manifest.json")
        config = manifest.get("config")
        if not isinstance(config, dict) or "algorithm" not in config:
            raise RunDataError(f"manifest {run_dir / 'manifest.json'} lacks the run's config (an RLHF run's "
                               "manifest records config.algorithm)")
        algorithm = config["algorithm"]
        table = read_parquet(run_dir / "updates.parquet",
                             BON_COLUMNS if algorithm == "best_of_n" else RL_COLUMNS).to_pandas()
        if table.empty:
            raise RunDataError(f"{run_dir / 'updates.parquet'} has no rows")
        beta = manifest.get("reference_beta", config.get("reference_kl", {}).get("beta"))
        models = manifest.get("models") if isinstance(manifest.get("models"), dict) else {}
        rm = config.get("reward_model") if isinstance(config.get("reward_model"), dict) else {}
        size = rm.get("model")
        row = {"run_id": manifest["run_id"], "cell": manifest["variant"], "label": manifest["variant_label"],
               "variant_file": manifest.get("variant_file", manifest["variant"]),
               "reference_beta": np.nan if beta is None else float(beta), "algorithm": algorithm,
               "seed": int(manifest["seed"]), "status": manifest["status"],
               "blocks": ",".join(manifest.get("blocks") or []), "run_dir": str(run_dir),
               "pipeline_seeds": bool(manifest.get("pipeline_seeds", False)), "models_key": manifest.get("models_key"),
               "reward_model": (f"{rm.get('pairs')} pairs, " + ("the policy's size" if size is None else
                                f"d = {size.get('d_model')}, {size.get('n_layer')} layers") +
                                f", label noise {rm.get('label_noise')}") if rm else "",
               **{k: float(models[k]) if isinstance(models.get(k), (int, float)) else np.nan for k in RM_COLUMNS}}
        rows.append(row)
        tables.append(table.assign(**{k: row[k] for k in ("run_id", "cell", "label", "variant_file", "reference_beta",
                                                         "algorithm", "seed", "status")}))
    manifests = pd.DataFrame(rows)
    duplicated = manifests["run_id"][manifests["run_id"].duplicated()]
    if not duplicated.empty:
        raise RunDataError(f"run_id {duplicated.iloc[0]!r} appears in several runs: "
                           f"{manifests.loc[manifests['run_id'] == duplicated.iloc[0], 'run_dir'].tolist()}")
    records = pd.concat(tables, ignore_index=True)
    records["sqrt_kl"] = np.sqrt(records["ref_kl"].clip(lower=0).astype(float))
    return records, manifests


def cell_order(manifests: pd.DataFrame) -> list[str]:
    """Cells in the order the report lists them: by variant file, then reference β, best-of-n last."""
    first = manifests.drop_duplicates("cell").copy()
    first["bon"] = first["algorithm"] == "best_of_n"
    first["beta"] = first["reference_beta"].fillna(-1.0)
    return first.sort_values(["bon", "variant_file", "beta"], kind="stable")["cell"].tolist()


# ---------------------------------------------------------------- Gao et al.'s forms
def gao_rl(d, alpha: float, beta: float) -> np.ndarray:
    d = np.asarray(d, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(d > 0, d * (alpha - beta * np.log(np.where(d > 0, d, 1.0))), 0.0)


def gao_bon(d, alpha: float, beta: float) -> np.ndarray:
    d = np.asarray(d, dtype=float)
    return d * (alpha - beta * d)


def fit_gao(d, reward, form: str) -> dict:
    """Least-squares (α, β) of R(d) = d(α − β log d) (form "rl") or d(α − β d) (form "bon"), no intercept
    (R(0) = 0 by construction); with r2, the number of points and where the fitted curve peaks."""
    d, reward = np.asarray(d, dtype=float), np.asarray(reward, dtype=float)
    keep = np.isfinite(d) & np.isfinite(reward) & (d >= 0)
    d, reward = d[keep], reward[keep]
    if form == "rl":
        with np.errstate(divide="ignore", invalid="ignore"):
            second = np.where(d > 0, -d * np.log(np.where(d > 0, d, 1.0)), 0.0)
    elif form == "bon":
        second = -d * d
    else:
        raise ValueError(f"form must be 'rl' or 'bon', got {form!r}")
    out = {"n_points": int(d.size), "d_max": float(d.max()) if d.size else math.nan, "alpha": math.nan,
           "beta": math.nan, "r2": math.nan, "d_peak_fit": math.nan, "R_peak_fit": math.nan}
    X = np.column_stack([d, second])
    if d.size < 3 or np.linalg.matrix_rank(X) < 2:
        return out
    (alpha, beta), *_ = np.linalg.lstsq(X, reward, rcond=None)
    fitted = X @ np.array([alpha, beta])
    total = np.sum((reward - reward.mean()) ** 2)
    out.update(alpha=float(alpha), beta=float(beta),
               r2=float(1 - np.sum((reward - fitted) ** 2) / total) if total > 0 else math.nan)
    if beta > 0 and (form == "bon" or alpha / beta - 1 < 700):  # e^700: no peak within any reachable KL
        peak = math.exp(alpha / beta - 1) if form == "rl" else alpha / (2 * beta)
        if peak <= out["d_max"]:  # a peak beyond the data is an extrapolation, not a finding
            out["d_peak_fit"] = peak
            out["R_peak_fit"] = float((gao_rl if form == "rl" else gao_bon)(peak, alpha, beta))
    return out


def gains(records: pd.DataFrame) -> pd.DataFrame:
    """Each row's gold and proxy minus its run's first row (update 0: the SFT policy; best-of-n: n = 1)."""
    nan = pd.Series(np.nan, index=records.index)
    key = np.where(records["algorithm"] == "best_of_n", records.get("n", nan), records.get("update", nan))
    ordered = records.assign(_key=np.asarray(key, dtype=float)).sort_values(["run_id", "_key"], kind="stable")
    first = ordered.groupby("run_id")[["gold_reward", "proxy_reward"]].transform("first")
    ordered["gold_gain"] = ordered["gold_reward"] - first["gold_reward"]
    ordered["proxy_gain"] = ordered["proxy_reward"] - first["proxy_reward"]
    return ordered.drop(columns="_key")


def fits_table(records: pd.DataFrame, manifests: pd.DataFrame) -> pd.DataFrame:
    """One row per setting and reward (gold, proxy): Gao's form fitted to the completed runs' gains."""
    data = gains(records[records["status"] == "completed"])
    rows = []
    for cell in cell_order(manifests):
        part = data[data["cell"] == cell]
        if part.empty:
            continue
        bon = part["algorithm"].iloc[0] == "best_of_n"
        for reward in ("gold", "proxy"):
            fit = fit_gao(part["sqrt_kl"], part[f"{reward}_gain"], "bon" if bon else "rl")
            rows.append({"setting": part["label"].iloc[0], "cell": cell, "reference_beta": part["reference_beta"].iloc[0],
                         "reward": reward, "form": BON_FORM if bon else RL_FORM,
                         "n_runs": part["run_id"].nunique(), **fit})
    return pd.DataFrame(rows, columns=["setting", "cell", "reference_beta", "reward", "form", "n_runs", "n_points",
                                       "d_max", "alpha", "beta", "r2", "d_peak_fit", "R_peak_fit"])


# ---------------------------------------------------------------- peak and final gold
def run_summaries(records: pd.DataFrame) -> pd.DataFrame:
    """Per run: gold at the start, its (smoothed) peak and where, and its final value and KL."""
    rows = []
    for run_id, run in records.groupby("run_id", sort=False):
        bon = run["algorithm"].iloc[0] == "best_of_n"
        run = run.sort_values("n" if bon else "update")
        gold = run["gold_reward"].to_numpy(dtype=float)
        d = run["sqrt_kl"].to_numpy(dtype=float)
        if bon:
            smooth, at, last = gold, int(np.nanargmax(gold)), slice(-1, None)
            step = run["n"].to_numpy()
        else:
            smooth = pd.Series(gold).rolling(SMOOTH, center=True, min_periods=1).mean().to_numpy()
            at, last, step = int(np.nanargmax(smooth)), slice(-FINAL, None), run["update"].to_numpy()
        rows.append({"run_id": run_id, "cell": run["cell"].iloc[0], "status": run["status"].iloc[0],
                     "gold_start": gold[0], "peak_gold": smooth[at], "peak_update": float(step[at]),
                     "peak_sqrt_kl": d[at], "final_gold": float(np.mean(gold[last])),
                     "final_sqrt_kl": float(np.mean(d[last])),
                     "final_proxy": float(np.mean(run["proxy_reward"].to_numpy(dtype=float)[last]))})
    return pd.DataFrame(rows)


def _interval(values) -> tuple[float, float, float]:
    """Mean over the finite values (seeds) with its 95% Student-t interval (NaN bounds below two values)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    if values.size == 0:
        return math.nan, math.nan, math.nan
    return tuple(t_interval(values))


def _per_seed(runs: pd.DataFrame, column: str) -> str:
    """Each seed's value, in seed order: what an interval at 2–3 seeds stands on."""
    return ", ".join(f"{v:.2f}" for v in runs.sort_values("seed")[column] if np.isfinite(v))


def heldout_final(records: pd.DataFrame) -> pd.Series:
    """Per run: gold of its last evaluation on the held-out prompts (NaN when the run has none)."""
    if "heldout_gold_reward" not in records:
        return pd.Series(np.nan, index=records["run_id"].unique())
    rows = records.dropna(subset=["heldout_gold_reward"]).sort_values("update", kind="stable")
    return rows.groupby("run_id")["heldout_gold_reward"].last().reindex(records["run_id"].unique())


def peak_final_table(records: pd.DataFrame, manifests: pd.DataFrame) -> pd.DataFrame:
    summaries = run_summaries(records)
    summaries = summaries.merge(manifests[["run_id", "seed"]], on="run_id", how="left")
    summaries["heldout_final_gold"] = summaries["run_id"].map(heldout_final(records))
    rows = []
    for cell in cell_order(manifests):
        runs = summaries[summaries["cell"] == cell]
        meta = manifests[manifests["cell"] == cell].iloc[0]
        done = runs[runs["status"] == "completed"]
        peak, final = _interval(done["peak_gold"]), _interval(done["final_gold"])
        held = _interval(done["heldout_final_gold"])
        rows.append({"setting": meta["label"], "cell": cell, "blocks": meta["blocks"], "algorithm": meta["algorithm"],
                     "reference_beta": meta["reference_beta"], "n_runs": len(runs),
                     "n_diverged": int((runs["status"] != "completed").sum()),
                     "gold_start": done["gold_start"].mean(), "peak_gold": peak[0], "peak_ci_low": peak[1],
                     "peak_ci_high": peak[2], "peak_per_seed": _per_seed(done, "peak_gold"),
                     "peak_update": done["peak_update"].mean(),
                     "peak_sqrt_kl": done["peak_sqrt_kl"].mean(), "final_gold": final[0], "final_ci_low": final[1],
                     "final_ci_high": final[2], "final_per_seed": _per_seed(done, "final_gold"),
                     "final_sqrt_kl": done["final_sqrt_kl"].mean(),
                     "final_proxy": done["final_proxy"].mean(), "heldout_final_gold": held[0],
                     "heldout_final_ci_low": held[1], "heldout_final_ci_high": held[2]})
    return pd.DataFrame(rows)


# ---------------------------------------------------------------- the frontier
def _frontier_strata(ref_runs: list[pd.DataFrame], runs: list[pd.DataFrame]):
    """The frontier of the β = 0 runs and the β > 0 runs' points against it, or None when the β = 0 runs share no
    bin of d.

    β = 0 side, a row per run: [gold sum per bin, point count per bin]; β > 0 side, a row per run: [mean gold of
    its in-range points, mean interpolation weight of each bin over those points]. The frontier is (Σ sums)/(Σ
    counts) over the β = 0 rows, and a β > 0 run's mean gap is its mean gold minus its weights · frontier."""
    top = max(float(r["sqrt_kl"].max()) for r in ref_runs)
    if not top > 0:
        return None
    edges = np.linspace(0.0, top, FRONTIER_BINS + 1)
    sums, counts = [], []
    for run in ref_runs:
        idx = np.clip(np.digitize(run["sqrt_kl"], edges) - 1, 0, FRONTIER_BINS - 1)
        sums.append(np.bincount(idx, run["gold_reward"], FRONTIER_BINS))
        counts.append(np.bincount(idx, minlength=FRONTIER_BINS).astype(float))
    sums, counts = np.array(sums), np.array(counts)
    covered = (counts > 0).all(axis=0)
    if covered.sum() < 2:
        return None
    # each bin's point sits at the mean d of the β = 0 points in it (not the bin's centre, which would bias the
    # curve where points crowd one side of a bin)
    d_sums = np.zeros(FRONTIER_BINS)
    for run in ref_runs:
        idx = np.clip(np.digitize(run["sqrt_kl"], edges) - 1, 0, FRONTIER_BINS - 1)
        d_sums += np.bincount(idx, run["sqrt_kl"], FRONTIER_BINS)
    centres = d_sums[covered] / counts.sum(axis=0)[covered]
    ref_side = np.hstack([sums[:, covered], counts[:, covered]])
    rows, shares = [], []
    for run in runs:
        d = run["sqrt_kl"].to_numpy(dtype=float)
        inside = (d >= centres[0]) & (d <= centres[-1])
        shares.append(inside.mean())
        if not inside.any():
            continue
        # linear interpolation weights of each point on the bin centres (each row sums to 1)
        weights = np.stack([np.interp(d[inside], centres, unit) for unit in np.eye(len(centres))], axis=1)
        rows.append(np.r_[run["gold_reward"].to_numpy(dtype=float)[inside].mean(), weights.mean(axis=0)])
    if not rows:
        return None
    return ref_side, np.array(rows), float(np.mean(shares)), centres


def seed_gap(ref_run: pd.DataFrame, run: pd.DataFrame) -> tuple[float, float]:
    """One seed's gold at matched KL: the β > 0 run's mean gold minus the β = 0 run's frontier at the same d, over
    the β > 0 run's updates inside the frontier's range; and the share of its updates there. NaN when none is."""
    strata = _frontier_strata([ref_run], [run])
    if strata is None:
        return math.nan, 0.0
    ref_side, run_side, share, centres = strata
    nb = len(centres)
    frontier = ref_side[0, :nb] / ref_side[0, nb:]
    return float(run_side[0, 0] - run_side[0, 1:] @ frontier), share


def matched_kl_gap(ref_runs: dict[int, pd.DataFrame], runs: dict[int, pd.DataFrame]) -> dict:
    """Gold at matched KL (FRONTIER_RULE): per seed run at both β (``ref_runs`` and ``runs`` map seed -> run), the
    β > 0 run's gap to its own seed's β = 0 frontier; their mean with a 95% Student-t interval."""
    pairs = sorted(set(ref_runs) & set(runs))
    gaps, shares = [], []
    for seed in pairs:
        gap, share = seed_gap(ref_runs[seed], runs[seed])
        shares.append(share)
        if math.isfinite(gap):
            gaps.append(gap)
    point, low, high = t_interval(np.array(gaps)) if gaps else (math.nan, math.nan, math.nan)
    return {"n_pairs": len(gaps), "matched_kl_gap": float(point), "gap_ci_low": float(low), "gap_ci_high": float(high),
            "gap_per_seed": ", ".join(f"{g:+.2f}" for g in gaps),
            "share_in_range": float(np.mean(shares)) if shares else 0.0}


def verdict(gap_low: float, gap_high: float, stop: float, ref_peak: float) -> str:
    if not (math.isfinite(gap_low) and math.isfinite(gap_high)):
        where = "no interval (fewer than two seeds run at both β)"
    elif gap_low > 0:
        where = "moves the frontier up"
    elif gap_high < 0:
        where = "moves the frontier down"
    else:
        where = "on the β = 0 frontier"
    if math.isfinite(stop) and math.isfinite(ref_peak):
        where += "; stops earlier" if stop < ref_peak else "; goes past the β = 0 peak"
    return where


def frontier_table(records: pd.DataFrame, manifests: pd.DataFrame) -> pd.DataFrame:
    done = records[(records["status"] == "completed") & (records["algorithm"] != "best_of_n")]
    summaries = run_summaries(done) if not done.empty else pd.DataFrame(columns=["run_id", "cell"])
    columns = ["variant_file", "setting", "reference_beta", "n_runs", "n_runs_ref0", "n_pairs", "stop_sqrt_kl",
               "stop_gold", "ref0_peak_gold", "ref0_peak_sqrt_kl", "matched_kl_gap", "gap_ci_low", "gap_ci_high",
               "gap_per_seed", "share_in_range", "verdict"]
    rows = []
    for variant, part in done.groupby("variant_file", sort=True):
        ref = part[part["reference_beta"] == 0]
        if ref.empty:
            continue
        ref_runs = {int(r["seed"].iloc[0]): r for _, r in ref.groupby("run_id")}
        ref_summary = summaries[summaries["run_id"].isin(ref["run_id"].unique())]
        for beta, cell in sorted(part[part["reference_beta"] > 0].groupby("reference_beta"), key=lambda x: x[0]):
            runs = {int(r["seed"].iloc[0]): r for _, r in cell.groupby("run_id")}
            own = summaries[summaries["run_id"].isin(cell["run_id"].unique())]
            gap = matched_kl_gap(ref_runs, runs)
            stop, ref_peak = own["final_sqrt_kl"].mean(), ref_summary["peak_sqrt_kl"].mean()
            rows.append({"variant_file": variant, "setting": cell["label"].iloc[0], "reference_beta": beta,
                         "n_runs": len(runs), "n_runs_ref0": len(ref_runs), "stop_sqrt_kl": stop,
                         "stop_gold": own["final_gold"].mean(), "ref0_peak_gold": ref_summary["peak_gold"].mean(),
                         "ref0_peak_sqrt_kl": ref_peak, **gap,
                         "verdict": verdict(gap["gap_ci_low"], gap["gap_ci_high"], stop, ref_peak)})
    return pd.DataFrame(rows, columns=columns)


# ---------------------------------------------------------------- figures
def _beta_title(beta: float) -> str:
    return "variant's own reference KL" if not math.isfinite(beta) else f"reference β = {beta:g}"


def _mean_curve(part: pd.DataFrame, x: str) -> pd.DataFrame:
    """Mean over seeds at each update (or n) of gold, proxy and d."""
    key = "n" if part["algorithm"].iloc[0] == "best_of_n" else "update"
    return part.groupby(key)[["gold_reward", "proxy_reward", "sqrt_kl", "gold_gain", "proxy_gain"]].mean() \
        .reset_index().sort_values(x)


def _save_panels(fig, handles: dict, title: str, path: Path, dpi: int) -> Path:
    """A figure of panels with one legend entry per setting below them, titled and written to ``path``."""
    if handles:
        fig.legend(handles=list(handles.values()), loc="outside lower center", ncols=min(4, len(handles)),
                   fontsize="small")
    fig.suptitle(title, fontsize="medium")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=dpi)
    return path


def plot_overoptimisation(records: pd.DataFrame, manifests: pd.DataFrame, fits: pd.DataFrame, path: Path,
                          title: str) -> Path:
    """Gold (top) and proxy (bottom) gained over the SFT policy against √KL(π‖π_ref), a column per reference β:
    each setting's mean over seeds per update (solid) and Gao's fitted form (dashed, same colour)."""
    data = gains(records[records["status"] == "completed"])
    betas = sorted(data["reference_beta"].fillna(math.inf).unique()) or [math.inf]
    cells = cell_order(manifests)
    colors = variant_colors(data["variant_file"].unique())
    fig, axes = new_figure((3.6 * len(betas) + 0.6, 6.6), 2, len(betas))
    axes = axes.reshape(2, len(betas))
    handles = {}
    for col, beta in enumerate(betas):
        for cell in cells:
            part = data[(data["cell"] == cell) & (data["reference_beta"].fillna(math.inf) == beta)]
            if part.empty:
                continue
            variant = part["variant_file"].iloc[0]
            curve = _mean_curve(part, "sqrt_kl")
            for row, reward in enumerate(("gold", "proxy")):
                ax = axes[row, col]
                ax.plot(curve["sqrt_kl"], curve[f"{reward}_gain"], color=colors[variant], lw=1.0, alpha=0.8,
                        marker="o" if part["algorithm"].iloc[0] == "best_of_n" else None, ms=3)
                fit = fits[(fits["cell"] == cell) & (fits["reward"] == reward)]
                if not fit.empty and math.isfinite(fit["alpha"].iloc[0]):
                    grid = np.linspace(0, float(curve["sqrt_kl"].max()), 60)
                    form = gao_bon if part["algorithm"].iloc[0] == "best_of_n" else gao_rl
                    ax.plot(grid, form(grid, fit["alpha"].iloc[0], fit["beta"].iloc[0]), color=colors[variant],
                            ls="--", lw=0.9)
            handles.setdefault(variant, Line2D([], [], color=colors[variant], lw=2,
                                               label=part["label"].iloc[0].split(", ref β")[0]))
        axes[0, col].set_title(_beta_title(beta), fontsize="medium")
        axes[1, col].set_xlabel("d = √KL(π‖π_ref)  (nats^½)")
    axes[0, 0].set_ylabel("gold reward gained over SFT")
    axes[1, 0].set_ylabel("proxy reward gained over SFT")
    return _save_panels(fig, handles, title, path, dpi=110)


def plot_gold_curves(records: pd.DataFrame, manifests: pd.DataFrame, path: Path, title: str) -> Path:
    """Gold reward over updates, a panel per reference β, a line per setting (mean over seeds, smoothed as the
    peak is); best-of-n is not trained and has no curve here."""
    data = records[(records["status"] == "completed") & (records["algorithm"] != "best_of_n")]
    betas = sorted(data["reference_beta"].fillna(math.inf).unique()) or [math.inf]
    colors = variant_colors(data["variant_file"].unique()) if not data.empty else {}
    fig, axes = new_figure((3.6 * len(betas) + 0.6, 3.6), 1, len(betas))
    handles = {}
    for col, beta in enumerate(betas):
        ax = axes[col]
        for cell in cell_order(manifests):
            part = data[(data["cell"] == cell) & (data["reference_beta"].fillna(math.inf) == beta)]
            if part.empty:
                continue
            variant = part["variant_file"].iloc[0]
            curve = part.groupby("update")["gold_reward"].mean()
            ax.plot(curve.index, curve.rolling(SMOOTH, center=True, min_periods=1).mean(), color=colors[variant], lw=1.2)
            handles.setdefault(variant, Line2D([], [], color=colors[variant], lw=2,
                                               label=part["label"].iloc[0].split(", ref β")[0]))
        ax.set_title(_beta_title(beta), fontsize="medium")
        ax.set_xlabel("update")
    axes[0].set_ylabel("gold reward (batch mean)")
    return _save_panels(fig, handles, title, path, dpi=110)


# ---------------------------------------------------------------- the over-optimisation, shown
def _points(run: pd.DataFrame) -> dict[str, float]:
    """Where one run's smoothed proxy and gold peak, and its end, on its own axis (update; best-of-n: n)."""
    bon = run["algorithm"].iloc[0] == "best_of_n"
    key = "n" if bon else "update"
    run = run.sort_values(key)
    steps = run[key].to_numpy(dtype=float)
    out = {}
    for name, column in (("proxy peak", "proxy_reward"), ("gold peak", "gold_reward")):
        values = run[column].to_numpy(dtype=float)
        smooth = values if bon else pd.Series(values).rolling(SMOOTH, center=True, min_periods=1).mean().to_numpy()
        out[name] = steps[int(np.nanargmax(smooth))]
    out["end"] = steps[-1]
    return out


def sample_table(records: pd.DataFrame, manifests: pd.DataFrame) -> pd.DataFrame:
    """Per setting (its lowest completed seed): the first SAMPLES_SHOWN sampled responses where the proxy peaks,
    where gold peaks and at the end (SAMPLES_NOTE). Runs without samples.parquet are skipped."""
    columns = ["setting", "cell", "seed", "point", "at", "sample_update", "index", "prompt", "response",
               "proxy_reward", "gold_reward", "violations", "repeats"]
    rows = []
    done = manifests[manifests["status"] == "completed"]
    for cell in cell_order(manifests):
        runs = done[done["cell"] == cell].sort_values("seed")
        if runs.empty or not (Path(runs["run_dir"].iloc[0]) / "samples.parquet").is_file():
            continue
        meta = runs.iloc[0]
        key = "n" if meta["algorithm"] == "best_of_n" else "update"
        samples = read_parquet(Path(meta["run_dir"]) / "samples.parquet", (key, *SAMPLE_COLUMNS)).to_pandas()
        if samples.empty:
            continue
        recorded = np.unique(samples[key].to_numpy(dtype=float))
        for point, at in _points(records[records["run_id"] == meta["run_id"]]).items():
            nearest = recorded[np.argmin(np.abs(recorded - at))]
            shown = samples[samples[key] == nearest].sort_values("index").head(SAMPLES_SHOWN)
            for sample in shown.to_dict("records"):
                rows.append({"setting": meta["label"], "cell": cell, "seed": int(meta["seed"]), "point": point,
                             "at": at, "sample_update": nearest, "index": int(sample["index"]),
                             "prompt": sample["prompt"], "response": sample["response"],
                             "proxy_reward": sample["proxy_reward"], "gold_reward": sample["gold_reward"],
                             "violations": sample.get("violations", np.nan), "repeats": sample.get("repeats", np.nan)})
    return pd.DataFrame(rows, columns=columns)


def _at(run: pd.DataFrame, column: str, update: float) -> float:
    """The run's ``column`` at ``update``, or at the nearest update that has it (held-out evaluations)."""
    rows = run.dropna(subset=[column])
    if rows.empty:
        return math.nan
    return float(rows[column].to_numpy()[np.argmin(np.abs(rows["update"].to_numpy(dtype=float) - update))])


def diagnostics_table(records: pd.DataFrame, manifests: pd.DataFrame) -> pd.DataFrame:
    """Per trained setting: each hack diagnostic at the start, at the gold peak and at the end (DIAGNOSTICS_NOTE)."""
    data = records[(records["status"] == "completed") & (records["algorithm"] != "best_of_n")]
    names = [k for k in DIAGNOSTICS if k in data]
    rows = []
    for cell in cell_order(manifests):
        part = data[data["cell"] == cell]
        if part.empty:
            continue
        per_run = []
        for _, run in part.groupby("run_id"):
            run = run.sort_values("update")
            peak = _points(run)["gold peak"]
            last = run.iloc[-FINAL:]
            entry = {}
            for name in names:
                entry[f"{name}_start"] = _at(run, name, 0)
                entry[f"{name}_at_gold_peak"] = _at(run, name, peak)
                entry[f"{name}_final"] = (_at(run, name, run["update"].max()) if name.startswith("heldout_")
                                          else float(last[name].mean()))
            per_run.append(entry)
        rows.append({"setting": part["label"].iloc[0], "cell": cell, "reference_beta": part["reference_beta"].iloc[0],
                     "n_runs": len(per_run), **pd.DataFrame(per_run).mean().to_dict()})
    return pd.DataFrame(rows)


def reward_model_table(manifests: pd.DataFrame) -> pd.DataFrame:
    """Per reward-model setting: the held-out accuracy of the reward models its runs started from
    (REWARD_MODEL_NOTE). A model is its models_key (its measures, for manifests without one): the same model built
    again on another processor can differ in the last bits of a measure (the correlation's float sums), and it is
    still one model, its measures averaged, not a second sample."""
    columns = ["reward_model", "n_models", "seeds", "n_settings",
               *[f"{c}{s}" for c in RM_COLUMNS for s in ("", "_ci_low", "_ci_high")]]
    known = manifests[manifests["reward_model"] != ""]
    rows = []
    for setting, part in known.groupby("reward_model", sort=False):
        keyed = part["models_key"].fillna("").astype(str) != ""
        models = pd.concat([part[keyed].groupby("models_key", sort=False)[list(RM_COLUMNS)].mean(),
                            part[~keyed].drop_duplicates(list(RM_COLUMNS))[list(RM_COLUMNS)]])
        row = {"reward_model": setting, "n_models": len(models),
               "seeds": ", ".join(map(str, sorted(part["seed"].unique()))), "n_settings": part["cell"].nunique()}
        for column in RM_COLUMNS:
            point, low, high = _interval(models[column])
            row.update({column: point, f"{column}_ci_low": low, f"{column}_ci_high": high})
        rows.append(row)
    return pd.DataFrame(rows, columns=columns)


def plot_diagnostics(records: pd.DataFrame, manifests: pd.DataFrame, path: Path, title: str) -> Path:
    """The hack diagnostics over updates: a row per diagnostic, a column per reference β, a line per setting (mean
    over seeds, the batch diagnostics smoothed as gold's peak is; held-out gold at its evaluations)."""
    data = records[(records["status"] == "completed") & (records["algorithm"] != "best_of_n")]
    names = [k for k in DIAGNOSTICS if k in data and data[k].notna().any()] or list(DIAGNOSTICS)[:1]
    betas = sorted(data["reference_beta"].fillna(math.inf).unique()) or [math.inf]
    colors = variant_colors(data["variant_file"].unique()) if not data.empty else {}
    fig, axes = new_figure((3.4 * len(betas) + 0.6, 2.3 * len(names) + 0.8), len(names), len(betas))
    axes = axes.reshape(len(names), len(betas))
    handles = {}
    for col, beta in enumerate(betas):
        for cell in cell_order(manifests):
            part = data[(data["cell"] == cell) & (data["reference_beta"].fillna(math.inf) == beta)]
            if part.empty:
                continue
            variant = part["variant_file"].iloc[0]
            for row, name in enumerate(names):
                if name not in part:
                    continue
                curve = part.dropna(subset=[name]).groupby("update")[name].mean()
                if not name.startswith("heldout_"):
                    curve = curve.rolling(SMOOTH, center=True, min_periods=1).mean()
                axes[row, col].plot(curve.index, curve, color=colors[variant], lw=1.0,
                                    marker="o" if name.startswith("heldout_") else None, ms=2)
            handles.setdefault(variant, Line2D([], [], color=colors[variant], lw=2,
                                               label=part["label"].iloc[0].split(", ref β")[0]))
        axes[0, col].set_title(_beta_title(beta), fontsize="medium")
        axes[-1, col].set_xlabel("update")
    for row, name in enumerate(names):
        axes[row, 0].set_ylabel(DIAGNOSTICS[name], fontsize="small")
    return _save_panels(fig, handles, title, path, dpi=100)


def seeds_note(manifests: pd.DataFrame) -> str:
    """What the seeds of these runs vary, from their manifests."""
    pipeline = manifests["pipeline_seeds"].astype(bool)
    if pipeline.all():
        return ("Seeds vary the whole pipeline: seed k also seeds the grammar (its transitions and hidden valences), "
                "the SFT model and the reward model (pipeline_seeds), so intervals over seeds include that variation.")
    if not pipeline.any():
        return ("Seeds vary RL sampling only: the grammar, the SFT model and the reward model are the same in every "
                "run, so intervals over seeds leave out their variation.")
    return (f"{int(pipeline.sum())} of {len(pipeline)} runs have pipeline seeds (the seed also seeds the grammar, SFT "
            "and reward model), the others vary RL sampling only.")


def budget_notes(manifests: pd.DataFrame, budget_notes: Iterable[str]) -> list[str]:
    notes = [*budget_notes]
    notes.append(f"{len(manifests)} runs, {manifests['cell'].nunique()} settings, seeds "
                 f"{sorted(manifests['seed'].unique().tolist())}. {seeds_note(manifests)} The PPO paper has no "
                 "language-model experiment: this study applies its surrogates to RLHF on a synthetic language "
                 "(docs/rlhf.md).")
    return notes


def check_runs(manifests: pd.DataFrame) -> None:
    if manifests.empty:
        raise ReportError("no RLHF runs to report")
