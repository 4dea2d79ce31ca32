"""The paper's Table 1: average normalised score of each surrogate-objective setting.

Sec 6.1: per task, the random policy scores 0 and the best setting scores 1; a setting's
value is the mean over its runs (7 tasks x 3 seeds = 21 in the paper). The paper does
not publish its random or best scores, so both come from our own runs: "best" is the
setting with the highest mean (over seeds) final score on that task, chosen among the
variants present in ``scores``. The CI treats those constants as fixed.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.stats

from analysis.stats import mean, stratified_bootstrap_ci

TABLE1_COLUMNS = [
    "variant",
    "variant_label",
    "n_runs",
    "n_diverged",
    "ours",
    "ci_low",
    "ci_high",
    "published",
    "rank_ours",
    "rank_published",
]


def load_published_table1(path: str | Path) -> pd.DataFrame:
    """Read ppo2017_table1.csv keeping the no-clip row's empty ``param`` as ``""``."""
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    expected = {"setting", "param", "value"}
    if not expected <= set(table.columns):
        raise ValueError(f"{path} must have columns {sorted(expected)}, has {list(table.columns)}")
    table["value"] = table["value"].astype(float)
    if table.duplicated(["setting", "param"]).any():
        raise ValueError(f"{path} has duplicate (setting, param) rows")
    return table[["setting", "param", "value"]]


def paper_rows(manifests: pd.DataFrame) -> pd.DataFrame:
    """One ``(variant, paper_setting, paper_param)`` row per variant; conflicts are errors."""
    rows = manifests[["variant", "paper_setting", "paper_param"]].drop_duplicates()
    clash = rows["variant"][rows["variant"].duplicated()]
    if not clash.empty:
        raise ValueError(f"variant {clash.iloc[0]!r} has runs with different paper_row values")
    return rows.reset_index(drop=True)


def normalize_scores(scores: pd.DataFrame, random_scores: pd.Series) -> pd.DataFrame:
    """Add ``random_score``, ``best_variant``, ``best_score`` and ``normalized`` per run.

    normalized = (score - random) / (best - random), best = the variant with the highest
    mean final score over seeds on the task. Raises if a task has no random score or if
    best equals random (the scale would be undefined).
    """
    missing = sorted(set(scores["task"]) - set(random_scores.index))
    if missing:
        raise KeyError(f"no random score for tasks {missing}; have {sorted(random_scores.index)}")
    by_setting = scores.groupby(["task", "variant"])["score"].mean().reset_index()
    best = by_setting.loc[by_setting.groupby("task")["score"].idxmax()]
    best = best.rename(columns={"variant": "best_variant", "score": "best_score"})
    out = scores.merge(best, on="task", how="left")
    out["random_score"] = out["task"].map(random_scores).astype(float)
    span = out["best_score"] - out["random_score"]
    flat = sorted(out.loc[span == 0, "task"].unique())
    if flat:
        raise ValueError(f"best setting equals the random score on {flat}: cannot normalise")
    below = sorted(out.loc[span < 0, "task"].unique())
    if below:
        warnings.warn(f"every setting scores below random on {below}; normalised scale is inverted")
    out["normalized"] = (out["score"] - out["random_score"]) / span
    return out


def per_task_table(normalized: pd.DataFrame) -> pd.DataFrame:
    """Task x variant mean normalised score, with each task's random and best raw scores."""
    wide = normalized.pivot_table(
        index="task", columns="variant", values="normalized", aggfunc="mean"
    )
    wide.columns.name = None
    consts = normalized.groupby("task")[["random_score", "best_variant", "best_score"]].first()
    return consts.join(wide).reset_index()


def table1(
    scores: pd.DataFrame,
    random_scores: pd.Series,
    paper_map: pd.DataFrame | None = None,
    published: pd.DataFrame | None = None,
    n_resamples: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Our Table 1 with stratified-bootstrap CIs and the published value beside it.

    ``paper_map`` comes from :func:`paper_rows`, ``published`` from
    :func:`load_published_table1`; without them ``published`` is NaN. ``rank_ours``
    ranks all variants (1 = best); ``rank_published`` ranks the variants that have a
    published value. Ties share the average rank.
    """
    norm = normalize_scores(scores, random_scores)
    labels = norm.groupby("variant")["variant_label"].first()
    rows = []
    for variant, group in norm.groupby("variant", sort=True):
        by_task = {t: g["normalized"].to_numpy() for t, g in group.groupby("task", sort=True)}
        ci = stratified_bootstrap_ci(by_task, mean, n_resamples, confidence, seed)
        rows.append(
            {
                "variant": variant,
                "variant_label": labels[variant],
                "n_runs": len(group),
                "n_diverged": int((group["status"] == "diverged").sum()),
                "ours": ci.point,
                "ci_low": ci.low,
                "ci_high": ci.high,
            }
        )
    out = pd.DataFrame(rows)
    out["published"] = np.nan
    if paper_map is not None and published is not None:
        keyed = paper_map.merge(
            published,
            left_on=["paper_setting", "paper_param"],
            right_on=["setting", "param"],
            how="inner",
        ).set_index("variant")["value"]
        out["published"] = out["variant"].map(keyed).astype(float)
    out["rank_ours"] = out["ours"].rank(ascending=False, method="average")
    out["rank_published"] = out["published"].rank(ascending=False, method="average")
    out = out.sort_values(["ours", "variant"], ascending=[False, True], kind="stable")
    return out.reset_index(drop=True)[TABLE1_COLUMNS]


def rank_agreement(table: pd.DataFrame) -> dict:
    """Spearman rank correlation between ``ours`` and ``published`` where both exist."""
    both = table.dropna(subset=["ours", "published"])
    result: dict = {"n": int(len(both)), "variants": both["variant"].tolist()}
    if len(both) < 3:
        result.update(rho=float("nan"), p=float("nan"))
        return result
    res = scipy.stats.spearmanr(both["ours"], both["published"])
    result.update(rho=float(res.statistic), p=float(res.pvalue))
    return result
