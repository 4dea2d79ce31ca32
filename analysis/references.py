"""Our per-task scores for one variant beside other published PPO numbers.

The published numbers use other env versions, budgets and metrics (SOURCES.md Flag 8),
so every reference row carries a ``comparable`` note spelling out the differences; the
metric is derived from the row's own source/note text, never assumed. With ``note_only`` it
is read from the note alone (no source-level rule), so a row whose note does not state its
metric says so.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pandas as pd

from analysis.stats import bootstrap_ci, mean

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
SPREAD_COLUMNS = ["refs_low", "refs_high", "vs_refs"]


def reference_spread(references: pd.DataFrame, our_steps: float, our_low: float, our_high: float) -> dict:
    """Whether our interval lies wholly outside the references' spread: the lowest mean − std to the
    highest mean + std (a missing std counts as 0) of the PPO rows at our budget whose metric is one of
    SPREAD_METRICS. ``vs_refs`` is below, above or within; blank when no row qualifies."""
    if not references.empty:
        same_metric = references.apply(lambda r: reference_metric(r["source"], r["note"]) in SPREAD_METRICS, axis=1)
        references = references[(references["steps"] == our_steps) & same_metric]
    if references.empty:
        return {"refs_low": math.nan, "refs_high": math.nan, "vs_refs": ""}
    std = references["std"].fillna(0.0)
    low, high = float((references["mean"] - std).min()), float((references["mean"] + std).max())
    verdict = "below" if our_high < low else "above" if our_low > high else "within"
    return {"refs_low": low, "refs_high": high, "vs_refs": verdict}


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
    """Per task: our mean final score (bootstrap CI over seeds) beside each PPO reference row, and
    whether it falls outside the references' spread (:func:`reference_spread`, the same on every row of
    the task): a disagreement that needs a hypothesis (issue 15).

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
        ci = bootstrap_ci(group["score"].to_numpy(), mean, n_resamples, seed=seed)
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
        one_seed = math.isnan(ci.low)  # no interval from one seed: its mean stands for it
        base |= reference_spread(matches, our_steps, ci.point if one_seed else ci.low,
                                 ci.point if one_seed else ci.high)
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
               "difference_ci_high", "sb3_steps"]


def load_sb3_scores(folder: Path, window: int = 100) -> pd.DataFrame:
    """Last-``window`` mean return of each run of benchmarks/mujoco_sb3_reference.py under ``folder``
    (<task>/seed<k>/episodes.parquet and manifest.json): columns task, seed, score, total_steps."""
    import json

    rows = []
    for manifest in sorted(Path(folder).glob("*/seed*/manifest.json")):
        meta = json.loads(manifest.read_text())
        episodes = pd.read_parquet(manifest.parent / "episodes.parquet").sort_values("global_step", kind="stable")
        rows.append({"task": meta["task"], "seed": meta["seed"], "total_steps": meta["total_steps"],
                     "score": float(episodes["episode_return"].tail(window).mean())})
    return pd.DataFrame(rows, columns=["task", "seed", "score", "total_steps"])


def sb3_difference(scores: pd.DataFrame, sb3: pd.DataFrame, variant: str = "clip_0.2",
                   n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per task with SB3 runs: our mean final score, SB3's, and ours − SB3's with a percentile bootstrap
    interval that resamples our seeds and SB3's seeds independently (same metric: last-100 training
    episodes, same v5 task and budget)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []
    ours_all = scores[scores["variant"] == variant]
    for task, theirs in sb3.groupby("task", sort=True):
        ours = ours_all.loc[ours_all["task"] == task, "score"].to_numpy(float)
        other = theirs["score"].to_numpy(float)
        if len(ours) == 0:
            continue
        difference, low, high = difference_ci(ours, other, rng, n_resamples, confidence)
        rows.append({"task": task, "our_n_seeds": len(ours), "our_mean": ours.mean(), "sb3_n_seeds": len(other),
                     "sb3_mean": other.mean(), "difference": difference, "difference_ci_low": low,
                     "difference_ci_high": high, "sb3_steps": int(theirs["total_steps"].max())})
    return pd.DataFrame(rows, columns=SB3_COLUMNS)


def difference_ci(a, b, rng, n_resamples: int = 10_000, confidence: float = 0.95) -> tuple[float, float, float]:
    """mean(a) − mean(b) and its percentile bootstrap interval, resampling a's and b's values (seeds)
    independently, with replacement."""
    import numpy as np

    a, b = np.asarray(a, float), np.asarray(b, float)
    draws = rng.choice(a, (n_resamples, len(a))).mean(axis=1) - rng.choice(b, (n_resamples, len(b))).mean(axis=1)
    alpha = (1 - confidence) / 2
    return float(a.mean() - b.mean()), float(np.quantile(draws, alpha)), float(np.quantile(draws, 1 - alpha))
