"""Our per-task scores for one variant beside other published PPO numbers.

The published numbers use other env versions, budgets and metrics (SOURCES.md Flag 8),
so every reference row carries a ``comparable`` note spelling out the differences; the
metric is derived from the row's own source/note text, never assumed. With ``note_only`` it
is read from the note alone (no source-level rule), so a row whose note does not state its
metric says so.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd

import numpy as np

from analysis.stats import (Difference, difference_text, interval_side, same_runs, t_interval,
                            welch_difference, welch_samples)

REFERENCE_COLUMNS = ["source", "env", "env_version", "algo", "steps", "mean", "std", "n_seeds", "note"]
_VERSION = re.compile(r"-v\d+$")
_PPO = re.compile(r"(?<![a-z])ppo", re.IGNORECASE)

# (where to look, lower-case phrase, label); first match wins. Rows whose text states
# the metric come first, then source-level rules (cleanrl / openrlbenchmark pages all
# use the rlops last-100 pipeline even where a row's note does not repeat it).
_METRIC_RULES: list[tuple[str, str, str]] = [
    ("note", "max over", "max-over-training eval"),
    # openai/baselines columns of the CleanRL pages: "same metric pipeline as CleanRL column".
    ("note", "same metric pipeline as cleanrl", "last-100 training episodes"),
    ("note", "single training run", "single-run final-agent eval"),
    ("source", "zoo", "single-run final-agent eval"),
    ("note", "bootstrap mean", "bootstrap mean of final return, window not stated"),
    ("note", "last 100", "last-100 training episodes"),
    ("note", "last-100", "last-100 training episodes"),
    ("source", "cleanrl", "last-100 training episodes"),
    ("source", "openrlbenchmark", "last-100 training episodes"),
    ("note", "final reward", "final training reward, window not stated"),
]
SAME_METRIC = "last-100 training episodes"
NOT_STATED = "metric not stated"

_SPREAD_RULES: list[tuple[str, str]] = [
    ("standard error", "± is standard error, std blank"),
    ("evaluation episodes", "std over eval episodes, not seeds"),
    ("not defined", "meaning of ± not defined"),
]


def load_references(path: str | Path) -> pd.DataFrame:
    """Read mujoco_reference_scores.csv and check its columns."""
    table = pd.read_csv(path)
    missing = [c for c in REFERENCE_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(f"{path} lacks columns {missing}")
    return table


def task_env_name(task: str) -> str:
    """``Hopper-v5`` -> ``Hopper``: reference rows name the env without a version."""
    return _VERSION.sub("", task)


def format_steps(steps: float) -> str:
    """Compact step counts for notes: 1000000 -> '1M', 50000 -> '50k'."""
    if steps is None or (isinstance(steps, float) and math.isnan(steps)):
        return "?"
    if steps >= 1_000_000:
        return f"{steps / 1_000_000:g}M"
    if steps >= 1_000:
        return f"{steps / 1_000:g}k"
    return f"{int(steps)}"


def reference_metric(source: str, note: str, note_only: bool = False) -> str:
    """Which metric a reference row reports, read from its source and note text.

    ``note_only`` skips the source-level rules: the label then rests on the row's note alone,
    and a note that does not state the metric gives ``"metric not stated"``.
    """
    text = {"source": str(source).lower(), "note": str(note).lower()}
    for where, phrase, label in _METRIC_RULES:
        if note_only and where != "note":
            continue
        if phrase in text[where]:
            return label
    return NOT_STATED


def algo_rows(references: pd.DataFrame, prefix: str) -> pd.DataFrame:
    """Rows whose ``algo`` starts with ``prefix`` (case-insensitive): ``ppo`` takes ``ppo2 (...)``
    and ``ppo (...)`` but not ``trpo``; ``trpo`` takes ``trpo_mpi``."""
    algo = references["algo"].astype(str).str.strip().str.lower()
    return references[algo.str.startswith(prefix.lower())]


def comparable_note(ref: pd.Series, our_version: str, our_steps: float, note_only: bool = False) -> str:
    """One line saying how a reference row differs from our setup (metric as :func:`reference_metric`)."""
    parts = []
    if ref["env_version"] == our_version:
        parts.append(f"same env version {our_version}")
    else:
        parts.append(f"{ref['env_version']} vs our {our_version}")
    if pd.isna(ref["steps"]):
        parts.append(f"steps not stated vs our {format_steps(our_steps)}")
    elif ref["steps"] == our_steps:
        parts.append(f"same budget {format_steps(our_steps)} steps")
    else:
        parts.append(f"{format_steps(ref['steps'])} vs our {format_steps(our_steps)} steps")
    metric = reference_metric(ref["source"], ref["note"], note_only)
    if metric == NOT_STATED:
        parts.append(NOT_STATED)
    else:
        parts.append(f"metric: {metric}" + (" (same as ours)" if metric == SAME_METRIC else ""))
    if pd.isna(ref["n_seeds"]):
        parts.append("seeds not stated")
    elif ref["n_seeds"] == 1:
        parts.append("single run")
    note = str(ref["note"]).lower()
    parts.extend(text for phrase, text in _SPREAD_RULES if phrase in note)
    return "; ".join(parts)


# The metrics that score the end of training as ours does (the last episodes of training), which a
# disagreement is judged against; an evaluation's maximum over training, a tuned single run's final
# agent and a bootstrap over an unstated window are shown beside ours but measure something else.
SPREAD_METRICS = (SAME_METRIC, "final training reward, window not stated")
SPREAD_COLUMNS = ["refs_low", "refs_high", "n_refs_compared", "n_refs_consistent", "refs_text", "vs_refs"]
REFERENCE_RULE = (
    "Ours against the published PPO numbers at our budget that score the end of training (last-100 training "
    "episodes, or a final training reward; not an evaluation's maximum over training, not a single tuned run): "
    "against each, ours − the reference with Welch's 95% interval when the reference states its spread over its "
    "seeds (a population std, CleanRL's rlops pages, converted to ddof 1); when it states only how many seeds it "
    "averaged (baselines ppo2's 6), its mean is taken as a mean of that many runs that vary as ours do: ours − it "
    "± t(n − 1) · s · √(1/n + 1/n_ref), our n seeds and their standard deviation s (a t test that the two means "
    "agree, not anti-conservative as our n grows); else our 95% t interval, its mean taken as exact. vs_refs: "
    "'below' or 'above' when the interval lies wholly on that side of 0 for every reference, 'within' when it "
    "crosses 0 for at least one (n_refs_consistent of n_refs_compared), 'mixed' when ours is distinguishable from "
    "each but on both sides. refs_low to refs_high: the references' means, not an envelope of mean ± std."
)


def reference_sd(ref: pd.Series) -> tuple[float, int] | None:
    """(sample std over seeds, seeds) of a reference row whose std is a spread over its stated seeds; None when
    the std is missing, its meaning is not defined or the seeds are unknown. A population std (rlops) is
    converted to ddof 1."""
    std, n = ref.get("std"), ref.get("n_seeds")
    note = str(ref.get("note", "")).lower()
    if pd.isna(std) or pd.isna(n) or int(n) < 2 or "not defined" in note or "standard error" in note:
        return None
    n = int(n)
    return (float(std) * math.sqrt(n / (n - 1)) if "population" in note else float(std)), n


def versus_reference(our_scores: np.ndarray, ref: pd.Series, confidence: float = 0.95) -> Difference:
    """ours − the reference's mean: Welch's interval when the reference states its spread over seeds
    (:func:`reference_sd`); when it states only its number of seeds, our t interval widened by √(1 + n/n_ref), the
    reference's mean taken as one of n_ref runs with our spread (a test that both means agree, n − 1 degrees of
    freedom: taken as exact, a reference of 6 seeds would be called different from ours more often the more seeds
    we train); else our t interval shifted by its mean (the reference taken as exact)."""
    ours = np.asarray(our_scores, dtype=float)
    spread, mean = reference_sd(ref), float(ref["mean"])
    if spread is not None and ours.size >= 2:
        return welch_difference(float(ours.mean()), float(ours.std(ddof=1)), ours.size, mean,
                                spread[0], spread[1], confidence)
    point, low, high = t_interval(ours, confidence)
    n_ref = ref.get("n_seeds")
    if pd.isna(n_ref) or int(n_ref) < 1 or ours.size < 2:
        return Difference(point - mean, low - mean, high - mean, math.nan)
    half = (high - point) * math.sqrt(1 + ours.size / int(n_ref))
    return Difference(point - mean, point - mean - half, point - mean + half, float(ours.size - 1))


def _refs_text(means: pd.Series) -> str:
    if means.empty:
        return ""
    if len(means) == 1:
        return f"{means.iloc[0]:,.1f} (1 reference)"
    return f"{means.min():,.1f} to {means.max():,.1f} ({len(means)} references)"


def reference_spread(references: pd.DataFrame, our_steps: float, our_scores, confidence: float = 0.95) -> dict:
    """Ours (the per-seed scores ``our_scores``) against each PPO row at ``our_steps`` whose metric is one of
    SPREAD_METRICS, by :data:`REFERENCE_RULE`: ``vs_refs`` is below, above, within or mixed (blank when no row
    qualifies, ``no interval`` with one seed of ours); ``refs_low``/``refs_high`` the lowest and highest of those
    references' means, ``refs_text`` the same as a table prints it (one reference is one number)."""
    if not references.empty:
        same_metric = references.apply(lambda r: reference_metric(r["source"], r["note"]) in SPREAD_METRICS, axis=1)
        references = references[(references["steps"] == our_steps) & same_metric]
    ours = np.asarray(our_scores, dtype=float)
    if references.empty:
        return {"refs_low": math.nan, "refs_high": math.nan, "n_refs_compared": 0, "n_refs_consistent": 0,
                "refs_text": "", "vs_refs": ""}
    sides = [interval_side(d.low, d.high) for d in (versus_reference(ours, r, confidence)
                                                    for _, r in references.iterrows())]
    consistent = sum(side == "crosses 0" for side in sides)
    if ours.size < 2:
        verdict = "no interval"
    elif consistent:
        verdict = "within"
    else:
        verdict = "below" if set(sides) == {"below 0"} else "above" if set(sides) == {"above 0"} else "mixed"
    means = references["mean"].astype(float)
    return {"refs_low": float(means.min()), "refs_high": float(means.max()), "n_refs_compared": len(references),
            "n_refs_consistent": consistent, "refs_text": _refs_text(means), "vs_refs": verdict}


REF_COLUMNS = [
    "ref_source", "ref_algo", "ref_env_version", "ref_steps", "ref_mean", "ref_std",
    "ref_n_seeds", "ref_metric", "comparable",
]


def reference_columns(ref: pd.Series, our_version: str, our_steps: float, note_only: bool = False) -> dict:
    """The ``REF_COLUMNS`` of one reference row placed beside one of our results."""
    return {
        "ref_source": ref["source"],
        "ref_algo": ref["algo"],
        "ref_env_version": ref["env_version"],
        "ref_steps": ref["steps"],
        "ref_mean": ref["mean"],
        "ref_std": ref["std"],
        "ref_n_seeds": ref["n_seeds"],
        "ref_metric": reference_metric(ref["source"], ref["note"], note_only),
        "comparable": comparable_note(ref, our_version, our_steps, note_only),
    }


def per_task_reference(
    scores: pd.DataFrame,
    manifests: pd.DataFrame,
    references: pd.DataFrame,
    variant: str = "clip_0.2",
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per task: our mean final score (95% t interval over seeds) beside each PPO reference row, and
    whether it differs from the references (:func:`reference_spread` by :data:`REFERENCE_RULE`, the same on
    every row of the task): a disagreement that needs a hypothesis (issue 15). ``n_resamples`` and ``seed`` are
    unused (t intervals), kept for callers.

    Reference rows match on ``env`` == task name without version and an ``algo`` that
    names PPO (``ppo``/``ppo2``, not ``trpo``). A task with no reference keeps one row
    with empty reference columns.
    """
    ours = scores[scores["variant"] == variant]
    if ours.empty:
        raise ValueError(f"no scored runs for variant {variant!r}; have {sorted(scores['variant'].unique())}")
    meta = manifests.set_index("run_id")
    ppo_refs = references[references["algo"].astype(str).str.contains(_PPO)]
    rows = []
    for task, group in ours.groupby("task", sort=True):
        run_meta = meta.loc[group["run_id"]]
        versions = sorted(run_meta["env_version"].astype(str).unique())
        our_version = "/".join(versions)
        our_steps = float(run_meta["total_steps"].max())
        ci = t_interval(group["score"].to_numpy(dtype=float))
        base = {
            "task": task,
            "env": task_env_name(task),
            "our_env_version": our_version,
            "our_steps": int(our_steps),
            "our_n_seeds": len(group),
            "our_mean": ci.point,
            "our_ci_low": ci.low,
            "our_ci_high": ci.high,
        }
        matches = ppo_refs[ppo_refs["env"] == base["env"]]
        base |= reference_spread(matches, our_steps, group["score"].to_numpy(dtype=float))
        if matches.empty:
            rows.append(base)
            continue
        for _, ref in matches.iterrows():
            rows.append(base | reference_columns(ref, our_version, our_steps))
    columns = [
        "task", "env", "our_env_version", "our_steps", "our_n_seeds", "our_mean",
        "our_ci_low", "our_ci_high", *SPREAD_COLUMNS, *REF_COLUMNS,
    ]
    out = pd.DataFrame(rows).reindex(columns=columns)
    return out.reset_index(drop=True)


SB3_COLUMNS = ["task", "our_n_seeds", "our_mean", "sb3_n_seeds", "sb3_mean", "difference", "difference_ci_low",
               "difference_ci_high", "difference_text", "sb3_steps"]


def load_sb3_scores(folder: Path, window: int = 100) -> pd.DataFrame:
    """Last-``window`` mean return of each run of benchmarks/mujoco_sb3_reference.py under ``folder``
    (<task>/seed<k>/episodes.parquet and manifest.json): columns task, seed, score, total_steps."""
    rows = []
    for manifest in sorted(Path(folder).glob("*/seed*/manifest.json")):
        meta = json.loads(manifest.read_text())
        episodes = pd.read_parquet(manifest.parent / "episodes.parquet").sort_values("global_step", kind="stable")
        rows.append({"task": meta["task"], "seed": meta["seed"], "total_steps": meta["total_steps"],
                     "score": float(episodes["episode_return"].tail(window).mean())})
    return pd.DataFrame(rows, columns=["task", "seed", "score", "total_steps"])


SB3_VARIANT, SB3_LABEL = "sb3_ppo", "Stable-Baselines3 PPO, same settings"


def load_sb3_runs(folder: Path | None, total_steps: int | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The runs of benchmarks/mujoco_sb3_reference.py under ``folder`` as (episodes, manifests) in the shape the
    learning curves read (``analysis.curves.resample_runs``): variant :data:`SB3_VARIANT`, finished runs; only
    those of ``total_steps`` when given. Empty frames when there are none (or no ``folder``)."""
    episodes, rows = [], []
    for manifest in sorted(Path(folder).glob("*/seed*/manifest.json")) if folder is not None else []:
        meta = json.loads(manifest.read_text())
        if total_steps is not None and int(meta["total_steps"]) != int(total_steps):
            continue
        run_id = f"{meta['task']}__{SB3_VARIANT}__s{meta['seed']}"
        rows.append({"run_id": run_id, "task": meta["task"], "variant": SB3_VARIANT, "variant_label": SB3_LABEL,
                     "seed": int(meta["seed"]), "status": "completed", "total_steps": int(meta["total_steps"])})
        frame = pd.read_parquet(manifest.parent / "episodes.parquet")
        episodes.append(frame.assign(run_id=run_id, task=meta["task"], variant=SB3_VARIANT, variant_label=SB3_LABEL,
                                     seed=int(meta["seed"])))
    manifests = pd.DataFrame(rows, columns=["run_id", "task", "variant", "variant_label", "seed", "status",
                                            "total_steps"])
    columns = ["run_id", "task", "variant", "variant_label", "seed", "global_step", "episode_return"]
    return (pd.concat(episodes, ignore_index=True)[columns] if episodes else pd.DataFrame(columns=columns)), manifests


def sb3_difference(scores: pd.DataFrame, sb3: pd.DataFrame, variant: str = "clip_0.2",
                   n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per task with SB3 runs: our mean final score, SB3's, and ours − SB3's with Welch's 95% interval (the two
    sides' seeds independent; same metric: last-100 training episodes, same v5 task and budget); ``difference_text``
    says ``identical`` when both sides are the same runs. ``n_resamples`` and ``seed`` are unused, kept for
    callers."""
    rows = []
    ours_all = scores[scores["variant"] == variant]
    for task, theirs in sb3.groupby("task", sort=True):
        ours = ours_all.loc[ours_all["task"] == task, "score"].to_numpy(float)
        other = theirs["score"].to_numpy(float)
        if len(ours) == 0:
            continue
        difference, low, high = difference_ci(ours, other, confidence=confidence)
        rows.append({"task": task, "our_n_seeds": len(ours), "our_mean": ours.mean(), "sb3_n_seeds": len(other),
                     "sb3_mean": other.mean(), "difference": difference, "difference_ci_low": low,
                     "difference_ci_high": high, "difference_text": difference_text(ours, other, 1, confidence),
                     "sb3_steps": int(theirs["total_steps"].max())})
    return pd.DataFrame(rows, columns=SB3_COLUMNS)


def difference_ci(a, b, rng=None, n_resamples: int | None = None,
                  confidence: float = 0.95) -> tuple[float, float, float]:
    """mean(a) − mean(b) of two sets of independent runs and Welch's interval (:func:`analysis.stats.welch_samples`);
    ``(0, 0, 0)`` when both are the same runs (:func:`analysis.stats.same_runs`: print :func:`difference_text`,
    which says "identical"). A percentile bootstrap of 3 seeds against 3 gave an interval about two thirds as wide
    as it should be, and ±355 around 0 for identical runs. ``rng`` and ``n_resamples`` are unused, kept for
    callers."""
    if same_runs(a, b):
        return 0.0, 0.0, 0.0
    d = welch_samples(a, b, confidence)
    return d.point, d.low, d.high
