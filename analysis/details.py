"""The details study (issue 18): what each implementation detail and each tutorial mistake does to PPO.

Every variant of the study is one change to the paper preset (the anchor, clipping ε = 0.2), or all the details
at once (the modern preset). Scores are Table 1's normalised scores (:func:`analysis.table1.normalize_scores`:
per task our random policy = 0, the best setting of the study = 1). Against the anchor, per task and over tasks:

- **effect**: the mean over tasks of (the variant's mean normalised score − the anchor's), on the tasks both ran
  (with every task's seeds present it is the difference of Table 1's means); the 95% interval is Welch's,
  stratified over tasks (:func:`analysis.stats.stratified_welch`: the two sides' runs independent, each task's
  own variance over seeds, Welch–Satterthwaite degrees of freedom; one task is Welch's interval of its seeds). A
  percentile bootstrap of 2 or 3 seeds per side would give little more than the seeds' range. One run per task
  and setting gives no interval.
- **probability of improvement** ``P(variant > anchor)`` (:func:`analysis.aggregate.probability_of_improvement`).

A variant file's ``claim`` (ppo/config/experiments.py ``load_claim``) is checked with :func:`verdict`; its mechanism (a
per-update statistic of the runs, ``updates.parquet``) with :func:`mechanism_found`. The rule is stated in
:data:`VERDICT_RULE`, which every claims table prints.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import protocol
from analysis.aggregate import probability_of_improvement
from analysis.curves import plot_diagnostics, update_curves
from analysis.stats import Interval, stratified_t_interval, stratified_welch
from ppo.config.experiments import Claim
from ppo.envs.family import task_name

SUPPORTED, CONTRADICTED, INCONCLUSIVE = "supported", "contradicted", "inconclusive at this number of seeds"
NOT_TESTED = "not tested at this scale: none of its tasks ran"
NO_CLAIM = "no testable claim: the file names no direction"
# Per-update statistics of updates.parquet averaged per run (approx_kl: mean over the update's minibatch steps of
# ((r − 1) − log r) before each step; kl: KL[π_old, π] over the whole batch after the update; clipfrac: share of
# the minibatch samples with |r − 1| > the run's own ε), and two fractions computed here.
UPDATE_STATS = ("approx_kl", "kl", "clipfrac", "entropy", "explained_variance", "minibatch_steps")
RUN_STATS = (*UPDATE_STATS, "early_stop_fraction", "diverged_fraction")
NAN_INTERVAL = Interval(math.nan, math.nan, math.nan)

VERDICT_RULE = (
    "Verdict rule (analysis/details.py verdict), from each variant file's claim field: the score part holds when the "
    "95% Welch interval of the effect over the claim's tasks (stratified over tasks) lies wholly above 0 (claim: "
    "better), wholly below 0 (worse), "
    "or wholly inside ±margin (none: little change); it fails when the interval lies wholly on the other side of 0 "
    "(better, worse) or wholly outside ±margin (none). A claimed mechanism (a statistic of the updates compared "
    "with a number, or with the anchor's value as the difference variant − anchor against 0) is found when its 95% "
    "t interval (Welch's for a difference) lies wholly on the claimed side, absent when wholly on the other. "
    "Supported: the score part holds "
    "and the mechanism, if claimed, is found. Contradicted: the score part fails or the mechanism is absent. "
    "Otherwise, and always without an interval (one run per task and setting): inconclusive at this number of seeds."
)


def budget_line(manifests: pd.DataFrame, notes: Sequence[str] = (), paper_steps: float = 1e6,
                paper_seeds: object = 3) -> str:
    """The budget printed on every table and figure (:func:`analysis.protocol.steps_budget_line`)."""
    return protocol.steps_budget_line(manifests, notes, paper_steps, paper_seeds, per="setting")


# ---- score effects ---------------------------------------------------------------------------------------

def _by_task(frame: pd.DataFrame, variant: str, column: str, tasks: Sequence[str]) -> list[np.ndarray]:
    """The finite values of ``column`` of ``variant``'s runs, one array per task of ``tasks``, runs in seed order."""
    runs = frame[frame["variant"] == variant].sort_values(["task", "seed"], kind="stable")
    out = []
    for task in tasks:
        values = runs.loc[runs["task"] == task, column].to_numpy(dtype=float)
        out.append(values[np.isfinite(values)])
    return out


def _tasks_with_values(frame: pd.DataFrame, column: str, variants: Sequence[str],
                       tasks: Sequence[str] | None) -> list[str]:
    """The tasks (of ``tasks``, all when None) on which every one of ``variants`` has a finite ``column`` value."""
    finite = frame[np.isfinite(frame[column].to_numpy(dtype=float))]
    present = [set(finite.loc[finite["variant"] == v, "task"]) for v in variants]
    shared = set.intersection(*present) if present else set()
    return sorted(shared if tasks is None else shared & set(tasks))


def mean_over_tasks(frame: pd.DataFrame, column: str, variant: str, tasks: Sequence[str] | None = None,
                    n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Mean over tasks of ``variant``'s per-task mean of ``column``, with its 95% t interval stratified over tasks
    (:func:`analysis.stats.stratified_t_interval`; NaN bounds when a task has one run). ``n_resamples`` and
    ``seed`` are unused, kept for callers."""
    shared = _tasks_with_values(frame, column, [variant], tasks)
    if not shared:
        return NAN_INTERVAL
    point, low, high, _ = stratified_t_interval(_by_task(frame, variant, column, shared), confidence)
    return Interval(point, low, high)


def difference(frame: pd.DataFrame, column: str, variant: str, anchor: str, tasks: Sequence[str] | None = None,
               n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> Interval:
    """Mean over the tasks both ran of (``variant``'s mean of ``column`` − ``anchor``'s), with Welch's 95% interval
    stratified over tasks (:func:`analysis.stats.stratified_welch`); NaN when they share no task, NaN bounds when
    a task has one run of either. ``n_resamples`` and ``seed`` are unused, kept for callers."""
    shared = _tasks_with_values(frame, column, [variant, anchor], tasks)
    if not shared:
        return NAN_INTERVAL
    xs, ys = _by_task(frame, variant, column, shared), _by_task(frame, anchor, column, shared)
    point, low, high, _ = stratified_welch(xs, ys, confidence)
    return Interval(point, low, high)


def _improvement(normalized: pd.DataFrame, variant: str, anchor: str, tasks: Sequence[str],
                 n_resamples: int, confidence: float, seed: int) -> Interval:
    """P(variant > anchor) over ``tasks`` (analysis.aggregate); NaN when they share none of them."""
    subset = normalized[normalized["task"].isin(tasks)]
    if not ({variant, anchor} <= set(subset["variant"])):
        return NAN_INTERVAL
    try:
        return probability_of_improvement(subset, variant, anchor, n_resamples, confidence, seed)
    except ValueError:  # no task in common
        return NAN_INTERVAL


def _effect_row(normalized: pd.DataFrame, variant: str, anchor: str, tasks: Sequence[str],
                n_resamples: int, confidence: float, seed: int) -> dict:
    shared = _tasks_with_values(normalized, "normalized", [variant, anchor], tasks)
    runs = normalized[(normalized["variant"] == variant) & normalized["task"].isin(shared)]
    anchor_runs = normalized[(normalized["variant"] == anchor) & normalized["task"].isin(shared)]
    score = mean_over_tasks(normalized, "normalized", variant, shared, n_resamples, confidence, seed)
    base = mean_over_tasks(normalized, "normalized", anchor, shared, n_resamples, confidence, seed)
    effect = difference(normalized, "normalized", variant, anchor, shared, n_resamples, confidence, seed)
    better = _improvement(normalized, variant, anchor, shared, n_resamples, confidence, seed)
    return {
        "n_tasks": len(shared), "n_runs": len(runs), "n_diverged": int((runs["status"] == "diverged").sum()),
        "n_runs_anchor": len(anchor_runs), "score": score.point, "anchor_score": base.point,
        "effect": effect.point, "effect_ci_low": effect.low, "effect_ci_high": effect.high,
        "p_improvement": better.point, "p_ci_low": better.low, "p_ci_high": better.high,
    }


def _labels(frame: pd.DataFrame) -> pd.Series:
    return frame.groupby("variant")["variant_label"].first()


def _check_anchor(normalized: pd.DataFrame, anchor: str) -> None:
    if anchor not in set(normalized["variant"]):
        raise ValueError(f"the anchor {anchor!r} has no scored run; have {sorted(normalized['variant'].unique())}")


def effects(normalized: pd.DataFrame, anchor: str, n_resamples: int = 10_000, confidence: float = 0.95,
            seed: int = 0) -> pd.DataFrame:
    """Every variant against ``anchor`` over all tasks, largest effect first."""
    _check_anchor(normalized, anchor)
    labels, tasks = _labels(normalized), sorted(normalized["task"].unique())
    rows = [{"variant": v, "variant_label": labels[v],
             **_effect_row(normalized, v, anchor, tasks, n_resamples, confidence, seed)}
            for v in sorted(set(normalized["variant"]) - {anchor})]
    out = pd.DataFrame(rows, columns=["variant", "variant_label", *_effect_row_columns()])
    return out.sort_values(["effect", "variant"], ascending=[False, True], kind="stable").reset_index(drop=True)


def _effect_row_columns() -> list[str]:
    return ["n_tasks", "n_runs", "n_diverged", "n_runs_anchor", "score", "anchor_score", "effect", "effect_ci_low",
            "effect_ci_high", "p_improvement", "p_ci_low", "p_ci_high"]


def per_task_effects(normalized: pd.DataFrame, anchor: str, n_resamples: int = 10_000, confidence: float = 0.95,
                     seed: int = 0) -> pd.DataFrame:
    """Every variant against ``anchor`` on each task: one row per (task, variant), in the order of :func:`effects`
    within each task."""
    _check_anchor(normalized, anchor)
    labels = _labels(normalized)
    rows = []
    for task in sorted(normalized["task"].unique()):
        for variant in sorted(set(normalized.loc[normalized["task"] == task, "variant"]) - {anchor}):
            row = _effect_row(normalized, variant, anchor, [task], n_resamples, confidence, seed)
            rows.append({"task": task, "variant": variant, "variant_label": labels[variant], **row})
    out = pd.DataFrame(rows, columns=["task", "variant", "variant_label", *_effect_row_columns()])
    out = out.drop(columns="n_tasks")
    return out.sort_values(["task", "effect", "variant"], ascending=[True, False, True],
                           kind="stable").reset_index(drop=True)


# ---- mechanism statistics -----------------------------------------------------------------------------------

def run_statistics(updates: pd.DataFrame, manifests: pd.DataFrame,
                   full_minibatch_steps: Mapping[str, int] | None = None) -> pd.DataFrame:
    """One row per run (every run of ``manifests``): the mean over its updates of each of UPDATE_STATS (finite
    values only; NaN where the run logs none, e.g. clipfrac without clipping, minibatch_steps without
    target_kl), ``early_stop_fraction`` (the share of its updates that took fewer minibatch steps than
    ``full_minibatch_steps[variant]``, the epochs' full count; NaN without it) and ``diverged_fraction`` (1 for a
    diverged run, else 0)."""
    full = dict(full_minibatch_steps or {})
    keys = ["run_id", "task", "variant", "variant_label", "seed", "status"]
    out = manifests[keys].copy().reset_index(drop=True)
    grouped = {run_id: g for run_id, g in updates.groupby("run_id", sort=False)} if len(updates) else {}
    for stat in UPDATE_STATS:
        values = []
        for run_id in out["run_id"]:
            group = grouped.get(run_id)
            column = group[stat].to_numpy(dtype=float) if group is not None and stat in group else np.array([])
            finite = column[np.isfinite(column)]
            values.append(float(finite.mean()) if finite.size else math.nan)
        out[stat] = values
    stopped = []
    for run_id, variant in zip(out["run_id"], out["variant"]):
        group = grouped.get(run_id)
        steps = (group["minibatch_steps"].to_numpy(dtype=float)
                 if group is not None and "minibatch_steps" in group else np.array([]))
        steps = steps[np.isfinite(steps)]
        stopped.append(float((steps < full[variant]).mean()) if steps.size and variant in full else math.nan)
    out["early_stop_fraction"] = stopped
    out["diverged_fraction"] = (out["status"] == "diverged").astype(float)
    return out


def mechanism_found(run_stats: pd.DataFrame, claim: Claim, variant: str, anchor: str, tasks: Sequence[str],
                    n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> tuple[str, Interval]:
    """("yes" | "no" | "unclear" | "not measured", the interval compared): the claim's statistic of ``variant``
    over ``tasks`` (or its difference from ``anchor``'s, for ``value: anchor``) against the claimed threshold."""
    m = claim.mechanism
    if m is None:
        return "", NAN_INTERVAL
    if m.value == "anchor":
        measured, threshold = difference(run_stats, m.stat, variant, anchor, tasks, n_resamples, confidence, seed), 0.0
    else:
        measured, threshold = mean_over_tasks(run_stats, m.stat, variant, tasks, n_resamples, confidence, seed), m.value
    if math.isnan(measured.point):
        return "not measured", measured
    if math.isnan(measured.low):
        return "unclear", measured
    if m.op == ">":
        return ("yes" if measured.low > threshold else "no" if measured.high <= threshold else "unclear"), measured
    return ("yes" if measured.high < threshold else "no" if measured.low >= threshold else "unclear"), measured


def verdict(claim: Claim, effect: Interval, mechanism: str = "") -> tuple[str, str]:
    """(verdict, reason) by :data:`VERDICT_RULE`; ``mechanism`` is :func:`mechanism_found`'s first value."""
    low, high = effect.low, effect.high
    if math.isnan(low) or math.isnan(high):
        score, said = "unclear", "the effect has no interval (one run per task and setting)"
    elif claim.direction == "none":
        m = claim.margin
        score = "holds" if -m < low and high < m else "fails" if low > m or high < -m else "unclear"
        said = (f"the effect's interval [{low:.2f}, {high:.2f}] lies "
                + {"holds": f"inside ±{m:g}", "fails": f"outside ±{m:g}", "unclear": f"across ±{m:g}"}[score])
    else:
        sign = 1 if claim.direction == "better" else -1
        lo, hi = sorted((sign * low, sign * high))
        score = "holds" if lo > 0 else "fails" if hi < 0 else "unclear"
        side = {"holds": "above 0" if sign > 0 else "below 0", "fails": "below 0" if sign > 0 else "above 0",
                "unclear": "across 0"}[score]
        said = f"the effect's interval [{low:.2f}, {high:.2f}] lies {'wholly ' if score != 'unclear' else ''}{side}"
    parts = [said]
    if claim.mechanism is not None:
        parts.append({"yes": f"{claim.mechanism_text()} is found", "no": f"{claim.mechanism_text()} is absent",
                      "unclear": f"{claim.mechanism_text()} is unclear",
                      "not measured": f"{claim.mechanism.stat} was not measured"}.get(mechanism, "mechanism unknown"))
    reason = "; ".join(parts)
    if score == "fails" or mechanism == "no":
        return CONTRADICTED, reason
    if score == "holds" and (claim.mechanism is None or mechanism == "yes"):
        return SUPPORTED, reason
    return INCONCLUSIVE, reason


CLAIM_COLUMNS = [
    "variant", "variant_label", "claim", "prediction", "tasks", "n_runs", "effect", "effect_ci_low", "effect_ci_high",
    "mechanism", "mechanism_measured", "mechanism_ci_low", "mechanism_ci_high", "mechanism_found",
    "approx_kl", "approx_kl_anchor", "kl", "kl_anchor", "clipfrac", "clipfrac_anchor", "entropy", "entropy_anchor",
    "n_diverged", "n_diverged_anchor", "minibatch_steps", "early_stop_fraction", "verdict", "reason",
]


def claims_table(normalized: pd.DataFrame, run_stats: pd.DataFrame, claims: Mapping[str, tuple[str, Claim | None]],
                 anchor: str, n_resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """One row per variant of ``claims`` (variant -> (description, claim or None)) that has runs: the claim's text,
    its prediction, the effect over the claim's tasks, its mechanism, the mechanism statistics of the variant's runs
    beside the anchor's (mean over those tasks of the per-task means), and the verdict with its reason."""
    _check_anchor(normalized, anchor)
    labels = _labels(run_stats)
    study_tasks = sorted(run_stats["task"].unique())
    rows = []
    for variant, (description, claim) in claims.items():
        if variant == anchor or variant not in set(run_stats["variant"]):
            continue
        tasks = study_tasks if claim is None or not claim.tasks else \
            [t for t in study_tasks if task_name(t) in claim.tasks]
        runs = run_stats[(run_stats["variant"] == variant) & run_stats["task"].isin(tasks)]
        base = run_stats[(run_stats["variant"] == anchor) & run_stats["task"].isin(tasks)]
        row = {"variant": variant, "variant_label": labels[variant], "claim": description or "",
               "prediction": claim.text() if claim else "",
               "tasks": ", ".join(claim.tasks) if claim and claim.tasks else "all", "n_runs": len(runs)}
        effect = difference(normalized, "normalized", variant, anchor, tasks, n_resamples, confidence, seed) \
            if tasks else NAN_INTERVAL
        row.update(effect=effect.point, effect_ci_low=effect.low, effect_ci_high=effect.high)
        found, measured = mechanism_found(run_stats, claim, variant, anchor, tasks, n_resamples, confidence, seed) \
            if claim is not None and tasks else ("", NAN_INTERVAL)
        row.update(mechanism=claim.mechanism_text() if claim else "", mechanism_measured=measured.point,
                   mechanism_ci_low=measured.low, mechanism_ci_high=measured.high, mechanism_found=found)
        for stat in ("approx_kl", "kl", "clipfrac", "entropy"):
            row[stat] = _mean_of_task_means(runs, stat)
            row[f"{stat}_anchor"] = _mean_of_task_means(base, stat)
        row.update(n_diverged=int((runs["status"] == "diverged").sum()),
                   n_diverged_anchor=int((base["status"] == "diverged").sum()),
                   minibatch_steps=_mean_of_task_means(runs, "minibatch_steps"),
                   early_stop_fraction=_mean_of_task_means(runs, "early_stop_fraction"))
        if claim is None:
            row.update(verdict=NO_CLAIM, reason="")
        elif not tasks:
            row.update(verdict=NOT_TESTED, reason=f"the claim is about {', '.join(claim.tasks)}")
        else:
            row["verdict"], row["reason"] = verdict(claim, effect, found)
        rows.append(row)
    return pd.DataFrame(rows, columns=CLAIM_COLUMNS)


def _mean_of_task_means(runs: pd.DataFrame, stat: str) -> float:
    values = runs[np.isfinite(runs[stat].to_numpy(dtype=float))]
    return float(values.groupby("task")[stat].mean().mean()) if len(values) else math.nan


# ---- the paper preset beside the modern one ------------------------------------------------------------------

MODERN_COLUMNS = ["task", "n_runs_paper", "n_runs_modern", "paper_return", "modern_return", "paper_score",
                  "modern_score", "difference", "ci_low", "ci_high", "p_improvement", "p_ci_low", "p_ci_high"]
ALL_TASKS = "all tasks (mean over tasks)"


def modern_table(normalized: pd.DataFrame, anchor: str, modern: str, n_resamples: int = 10_000,
                 confidence: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """Per task, then over all tasks: the paper preset's (``anchor``) and the modern preset's mean final return and
    normalised score, modern − paper with its interval, and P(modern > paper). Empty when either has no runs."""
    if not {anchor, modern} <= set(normalized["variant"]):
        return pd.DataFrame(columns=MODERN_COLUMNS)
    tasks = _tasks_with_values(normalized, "normalized", [anchor, modern], None)
    rows = []
    for label, chosen in [*((t, [t]) for t in tasks), (ALL_TASKS, tasks)]:
        row = _effect_row(normalized, modern, anchor, chosen, n_resamples, confidence, seed)
        one = len(chosen) == 1
        raw = normalized[normalized["task"].isin(chosen)].groupby("variant")["score"].mean()
        rows.append({"task": label, "n_runs_paper": row["n_runs_anchor"], "n_runs_modern": row["n_runs"],
                     "paper_return": raw[anchor] if one else math.nan,
                     "modern_return": raw[modern] if one else math.nan,
                     "paper_score": row["anchor_score"], "modern_score": row["score"], "difference": row["effect"],
                     "ci_low": row["effect_ci_low"], "ci_high": row["effect_ci_high"],
                     "p_improvement": row["p_improvement"], "p_ci_low": row["p_ci_low"], "p_ci_high": row["p_ci_high"]})
    return pd.DataFrame(rows, columns=MODERN_COLUMNS)


# ---- the mechanisms over training ------------------------------------------------------------------------------

MECHANISM_PANELS = (("approx_kl", "approx KL per minibatch step", "log"),
                    ("kl", "KL[π_old, π] after the update", "log"),
                    ("clipfrac", "clip fraction (|r − 1| > own ε)", "linear"))


def plot_mechanisms(updates: pd.DataFrame, variants: Sequence[str], path: str | Path, title: str,
                    n_resamples: int = 2_000, seed: int = 0) -> Path:
    """A row per task, a column per statistic of MECHANISM_PANELS: each of ``variants``' per-update values over
    environment steps (each run's updates averaged in bins of steps, :func:`analysis.curves.update_curves`), mean over
    seeds, the first of ``variants`` (the anchor) emphasised; KL on a log scale. ``n_resamples`` and ``seed`` are
    unused, kept for callers."""
    chosen = updates[updates["variant"].isin(variants)]
    curves = update_curves(chosen, [stat for stat, _, _ in MECHANISM_PANELS])
    return plot_diagnostics(curves, path, variants[0] if len(variants) else None, title, panels=MECHANISM_PANELS,
                            note="")
