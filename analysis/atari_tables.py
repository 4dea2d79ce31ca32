"""Atari tables from our runs (Sec 6.4); scores as defined in :mod:`analysis.atari`, whose checks and
loaders give the inputs. Pure functions of the loaded records and the reference CSVs:

- :func:`run_scores` one row per run: scores (1) and (2), episodes, steps and frames trained;
- :func:`table6` one row per game and variant: each seed's score (2), their mean with a 95% Student-t
  interval (n − 1 degrees of freedom: honest at 3 seeds, where a bootstrap interval is their range), beside
  the paper's value for that algorithm;
- :func:`verdicts` one line per game and variant: reproduced, not reproduced or undecided, against the paper's
  value (with an equivalence margin, :data:`VERDICT_MARGIN`) and against an independent reproduction with the same
  wrappers (Welch's interval of the difference);
- :func:`win_counts` (Table 2) per metric, the games each variant wins (highest mean over seeds among
  the variants present; an exact tie counts as ``tie``), beside the paper's counts;
- :func:`human_normalized` and :func:`aggregate_table`: (score − random) / (human − random) per run and
  IQM, median, mean and optimality gap per variant with stratified bootstrap intervals
  (:func:`analysis.aggregate.aggregate_metrics`, rliable's definitions);
- :func:`reference_table`: the rows of ``atari_reference_scores.csv`` for the same game and algorithm.

When several variants share an algorithm, each is its own competitor; paper counts (per algorithm) are
then left blank for them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
import pandas as pd

from analysis.aggregate import aggregate_metrics
from analysis.atari import ALGORITHMS, LAST_100, PAPER, SCORE_COLUMNS, TIE, WINDOW, human_table_source, lookup
from analysis.references import NOT_STATED, SAME_METRIC, algo_rows, format_steps, reference_metric
from analysis.scores import final_scores
from analysis.stats import t_interval, welch_difference

RUN_COLUMNS = [
    "run_id", "game", "task", "algorithm", "variant", "variant_label", "seed", "status", "frame_skip",
    "steps", "frames", "n_episodes", "score_all", "score_last", "n_last",
]
TABLE6_COLUMNS = [
    "game", "task", "algorithm", "variant", "variant_label", "frames", "paper_frames", "n_seeds", "n_unscored",
    "n_diverged", "min_last_episodes", "per_seed", "seed_min", "seed_max", "our_mean", "our_ci_low", "our_ci_high",
    "paper_mean", "our_all_mean", "our_hns", "paper_hns",
]
VERDICT_COLUMNS = [
    "game", "algorithm", "variant", "variant_label", "n_seeds", "frames", "per_seed", "our_mean", "our_ci_low",
    "our_ci_high", "paper_mean", "margin_low", "margin_high", "ref_algo", "ref_mean", "ref_sd", "ref_n", "diff_vs_ref", "diff_ci_low",
    "diff_ci_high", "verdict",
]
TABLE2_COLUMNS = [
    "scoring_metric", "winner", "variant", "variant_label", "our_wins", "paper_wins", "paper_table6_wins",
    "n_games", "competitors", "paper_n_games", "paper_algorithms", "skipped_games", "comparable",
]
NORMALIZED_COLUMNS = [
    "game", "task", "algorithm", "variant", "variant_label", "seed", "status", "score", "random", "human",
    "normalized",
]
_METRIC_COLUMNS = [c for m in ("iqm", "median", "mean", "optimality_gap") for c in (m, f"{m}_ci_low", f"{m}_ci_high")]
AGGREGATE_COLUMNS = [
    "source", "algorithm", "variant", "variant_label", "n_games", "n_runs", "n_diverged", *_METRIC_COLUMNS,
    "human_table",
]
REFERENCE_TABLE_COLUMNS = [
    "game", "algorithm", "variant", "variant_label", "frames", "n_seeds", "our_mean", "our_ci_low", "our_ci_high",
    "paper_mean", "n_refs", "ref_source", "ref_algo", "ref_frames_or_steps", "ref_score", "ref_sd", "ref_n",
    "diff_vs_ref", "diff_ci_low", "diff_ci_high", "ref_metric", "ref_note", "comparable",
]
NO_REFERENCE = "no published reference in reference/atari_reference_scores.csv"
_REF_ENV = re.compile(r"\benv ([A-Za-z0-9/_.-]+)")
_SINGLE_RUN = re.compile(r"single (training )?run", re.IGNORECASE)


def run_scores(
    episodes: pd.DataFrame, manifests: pd.DataFrame, updates: pd.DataFrame, window: int = WINDOW
) -> pd.DataFrame:
    """One row per run (:data:`RUN_COLUMNS`): scores (1) and (2), episodes counted, steps and frames
    trained. ``manifests`` must have passed :func:`check_runs` and :func:`attach_env_protocol`."""
    finite = episodes[np.isfinite(episodes["episode_return"].to_numpy(dtype=float))]
    last = final_scores(finite, window=window).set_index("run_id") if not finite.empty else None
    all_mean = finite.groupby("run_id")["episode_return"].mean()
    counts = finite.groupby("run_id").size()
    steps = updates.groupby("run_id")["global_step"].max() if not updates.empty else pd.Series(dtype=float)
    episode_steps = episodes.groupby("run_id")["global_step"].max()
    rows = []
    for _, run in manifests.iterrows():
        rid = run["run_id"]
        trained = steps.get(rid, episode_steps.get(rid, 0))
        scored = last is not None and rid in last.index
        rows.append(
            {
                **{k: run[k] for k in ("run_id", "game", "task", "algorithm", "variant", "variant_label", "seed",
                                       "status", "frame_skip")},
                "steps": int(trained),
                "frames": int(trained) * int(run["frame_skip"]),
                "n_episodes": int(counts.get(rid, 0)),
                "score_all": float(all_mean[rid]) if scored else math.nan,
                "score_last": float(last.loc[rid, "score"]) if scored else math.nan,
                "n_last": int(last.loc[rid, "n_episodes"]) if scored else 0,
            }
        )
    out = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return _sorted(out, ["game", "variant", "seed"])


def _sorted(table: pd.DataFrame, keys: Sequence[str]) -> pd.DataFrame:
    """Sort by ``keys`` with ``algorithm`` in Table 6 order right after ``game``."""
    order = table["algorithm"].map({a: i for i, a in enumerate(ALGORITHMS)}) if "algorithm" in table else 0
    keys = list(keys)
    at = keys.index("game") + 1 if "game" in keys else 0
    table = table.assign(_order=order)
    table = table.sort_values([*keys[:at], "_order", *keys[at:]], kind="stable")
    return table.drop(columns="_order").reset_index(drop=True)


def _competitor_names(scores: pd.DataFrame) -> pd.Series:
    """variant -> its display name: the algorithm when it is that algorithm's only variant, else the variant."""
    pairs = scores[["variant", "algorithm"]].drop_duplicates().set_index("variant")["algorithm"]
    shared = pairs.duplicated(keep=False)
    return pd.Series(np.where(shared, pairs.index, pairs.to_numpy()), index=pairs.index)


def per_seed_text(seeds: Sequence[int], values: Sequence[float]) -> str:
    """Each seed's score in seed order, as the tables print it: ``s0 12.5, s1 30.0``."""
    return ", ".join(f"s{int(seed)} {value:,.1f}" for seed, value in sorted(zip(seeds, values)))


def table6(
    scores: pd.DataFrame,
    paper: pd.DataFrame,
    random_human: pd.DataFrame | None = None,
    paper_frames: float = PAPER["frames"],
) -> pd.DataFrame:
    """Per game and variant (:data:`TABLE6_COLUMNS`): each seed's score (2) (``per_seed``, ``seed_min``,
    ``seed_max``), their mean with its 95% Student-t interval (NaN with one seed), beside the paper's Table 6
    value of its algorithm; ``our_all_mean`` is the mean over seeds of score (1), Table 2's other metric.

    ``frames`` is the most any seed trained (a diverged run trains fewer: ``n_diverged``); ``n_seeds``
    counts scored runs, ``n_unscored`` runs without a finished episode; ``min_last_episodes`` is the fewest
    episodes in a seed's score (100 unless a run finished fewer). ``our_hns`` and ``paper_hns`` are the
    human-normalised means when ``random_human`` is given."""
    rows = []
    for (game, variant), group in scores.groupby(["game", "variant"], sort=True):
        ref = lookup(paper, game, "Table 6")
        algorithm = group["algorithm"].iloc[0]
        scored = group[np.isfinite(group["score_last"].to_numpy(dtype=float))]
        values = scored["score_last"].to_numpy(dtype=float)
        point, low, high = t_interval(values) if len(values) else (math.nan, math.nan, math.nan)
        hns = paper_hns = math.nan
        if random_human is not None:
            scale = lookup(random_human, game, "human normalisation")
            hns = (point - scale["random"]) / (scale["human"] - scale["random"])
            paper_hns = (ref[algorithm] - scale["random"]) / (scale["human"] - scale["random"])
        rows.append(
            {
                "game": game,
                "task": group["task"].iloc[0],
                "algorithm": algorithm,
                "variant": variant,
                "variant_label": group["variant_label"].iloc[0],
                "frames": int(group["frames"].max()),
                "paper_frames": int(paper_frames),
                "n_seeds": len(scored),
                "n_unscored": len(group) - len(scored),
                "n_diverged": int((scored["status"] == "diverged").sum()),
                "min_last_episodes": int(scored["n_last"].min()) if len(scored) else 0,
                "per_seed": per_seed_text(scored["seed"], values),
                "seed_min": float(values.min()) if len(values) else math.nan,
                "seed_max": float(values.max()) if len(values) else math.nan,
                "our_mean": point,
                "our_ci_low": low,
                "our_ci_high": high,
                "paper_mean": float(ref[algorithm]),
                "our_all_mean": float(scored["score_all"].mean()) if len(scored) else math.nan,
                "our_hns": hns,
                "paper_hns": paper_hns,
            }
        )
    return _sorted(pd.DataFrame(rows, columns=TABLE6_COLUMNS), ["game", "variant"])


# A reference row's "± X = std across seeds" with its number of seeds. CleanRL's benchmark pages
# (docs/benchmark/*.md) are written by openrlbenchmark's rlops.py: per seed the mean of the last 100 episodes,
# then the mean and numpy's default std (ddof 0) over seeds (rlops.compare, openrlbenchmark @0820643).
_SPREAD = re.compile(r"±\s*([0-9][0-9,]*(?:\.[0-9]+)?)\s*(?:=\s*)?std across")
_SEEDS = re.compile(r"\b(\d+) seeds\b|--num-seeds (\d+)")
_RLOPS_PAGE = "docs/benchmark/"


def reported_spread(ref: pd.Series) -> tuple[float, int] | None:
    """(sample standard deviation over seeds, number of seeds) of a reference row whose note gives both and
    whose page is written by rlops (population std, converted here to ddof 1); None for any other row."""
    note = str(ref["note"])
    spread, seeds = _SPREAD.search(note), _SEEDS.search(note)
    if _RLOPS_PAGE not in str(ref["source"]) or spread is None or seeds is None:
        return None
    n = int(seeds.group(1) or seeds.group(2))
    if n < 2:
        return None
    return float(spread.group(1).replace(",", "")) * math.sqrt(n / (n - 1)), n


def _seed_scores(scores: pd.DataFrame, game: str, variant: str) -> np.ndarray:
    """The finite Table 6 scores of one game and variant's seeds."""
    values = scores.loc[(scores["game"] == game) & (scores["variant"] == variant), "score_last"].to_numpy(dtype=float)
    return values[np.isfinite(values)]


def _reference_difference(seed_scores: np.ndarray, ref: pd.Series | None) -> dict:
    """Welch's 95% interval of our mean − the reference's mean, when there is a reference stating its spread."""
    spread = None if ref is None else reported_spread(ref)
    if spread is None or len(seed_scores) < 2:
        return {"ref_sd": spread[0] if spread else math.nan, "ref_n": spread[1] if spread else math.nan,
                "diff_vs_ref": math.nan, "diff_ci_low": math.nan, "diff_ci_high": math.nan}
    sd, n = spread
    diff = welch_difference(float(np.mean(seed_scores)), float(np.std(seed_scores, ddof=1)), len(seed_scores),
                            float(ref["score"]), sd, n)
    return {"ref_sd": sd, "ref_n": n, "diff_vs_ref": diff.point, "diff_ci_low": diff.low, "diff_ci_high": diff.high}


# The independent reproduction each verdict names: the first reference row of the algorithm, for the game,
# that states its spread over seeds and ran gym's NoFrameskip-v4 ids with baselines' wrappers, as the paper's
# code did (CleanRL's ppo_atari.py for PPO; A2C and ACER have none with a stated spread).
_SAME_WRAPPERS = "NoFrameskip-v4"


def _independent_reference(references: pd.DataFrame, algorithm: str, game: str) -> pd.Series | None:
    rows = algo_rows(references, algorithm)
    rows = rows[(rows["game"] == game) & rows["note"].astype(str).str.contains(_SAME_WRAPPERS, regex=False)]
    for _, ref in rows.iterrows():
        if reported_spread(ref) is not None and atari_reference_metric(ref["source"], ref["note"]) == SAME_METRIC:
            return ref
    return None


def _between(value: float, low: float, high: float) -> str:
    return "inside" if low <= value <= high else ("above" if value > high else "below")


# "Reproduced" is an equivalence test, not the paper's value inside our interval: at 2 and 3 seeds the 95% t interval
# reaches 12.7 and 4.3 standard errors each side and holds almost any value. Our whole interval must lie within the
# paper's value ± this fraction of the paper's score above a random policy's (an equivalence margin: this project's
# choice, printed in every verdict), or above the paper's value (we do better); "not reproduced" when it lies below
# the margin; "undecided" otherwise. More seeds narrow the interval towards one of the three, never from
# reproduced to not reproduced at the same mean. Scaled by the gain over random, not the raw score, so that a
# negative or near-random score (Pong runs from -21 to 21) gets a margin of the same meaning as Breakout's.
VERDICT_MARGIN = 0.25
VERDICT_RULE = (
    f"with 2 or more scored seeds at the paper's budget, our 95% t interval against the paper's value ± "
    f"{VERDICT_MARGIN:.0%} of its gain over random play (an equivalence margin): 'reproduced' when the interval lies "
    f"within the margin, 'reproduced, above the paper' when it lies above the paper's value, 'not reproduced, below "
    f"the paper' when it lies below the margin, 'undecided at n seeds' otherwise"
)


def equivalence_range(paper: float, random: float, margin: float = VERDICT_MARGIN) -> tuple[float, float]:
    """The paper's value ± ``margin`` × (paper − random): the scores a reproduction may have and still count."""
    half = margin * abs(paper - random)
    return paper - half, paper + half


def verdict_line(row: dict, paper_frames: float) -> str:
    """One sentence: is the paper's value reproduced, with the evidence (the rule is in :func:`verdicts`)."""
    if row["frames"] < paper_frames:
        return (f"no verdict: trained {format_steps(row['frames'])} of the paper's {format_steps(paper_frames)} "
                "frames")
    if row["n_seeds"] < 2:
        return f"no verdict: {row['n_seeds']} scored seed(s), no interval (paper {row['paper_mean']:,.1f})"
    low, high, n, paper = row["our_ci_low"], row["our_ci_high"], row["n_seeds"], row["paper_mean"]
    interval = f"our 95% t interval {low:,.1f} to {high:,.1f} ({n} seeds)"
    band = (f"the paper's value ± {VERDICT_MARGIN:.0%} of its gain over random play "
            f"({row['margin_low']:,.1f} to {row['margin_high']:,.1f})")
    where = _between(paper, low, high) + " it"
    if low > paper:
        text = f"reproduced, above the paper: the paper's {paper:,.1f} is below {interval}"
    elif row["margin_low"] <= low and high <= row["margin_high"]:
        text = f"reproduced: {interval} lies within {band}; the paper's {paper:,.1f} is {where}"
    elif high < row["margin_low"]:
        text = f"not reproduced, below the paper: {interval} lies below {band}"
    else:
        text = f"undecided at {n} seeds: {interval} reaches beyond {band}; the paper's {paper:,.1f} is {where}"
    if not math.isnan(row["diff_ci_low"]):
        sign = "crosses zero: not distinguishable" if row["diff_ci_low"] <= 0 <= row["diff_ci_high"] else (
            "above it" if row["diff_ci_low"] > 0 else "below it")
        text += (f"; vs {row['ref_algo']} {row['ref_mean']:,.1f}: difference {row['diff_vs_ref']:+,.1f}, "
                 f"Welch 95% {row['diff_ci_low']:+,.1f} to {row['diff_ci_high']:+,.1f}, {sign}")
    return text


def verdicts(table6_rows: pd.DataFrame, scores: pd.DataFrame, references: pd.DataFrame,
             random_human: pd.DataFrame, paper_frames: float = PAPER["frames"]) -> pd.DataFrame:
    """Per game and variant (:data:`VERDICT_COLUMNS`) a one-line verdict.

    Rule, at the paper's budget and with two or more scored seeds, with our 95% Student-t interval of the mean and
    :func:`equivalence_range` (the paper's value ± :data:`VERDICT_MARGIN` of its gain over random play, random from
    ``random_human``): *reproduced* when the interval lies within that range; *reproduced, above the paper* when it
    lies above the paper's value; *not reproduced, below the paper* when it lies below the range; *undecided at n
    seeds* otherwise (an interval that wide also holds scores far from the paper's). The paper's value is itself a
    mean of 3 seeds, treated here as exact. The independent reproduction (:func:`_independent_reference`) is
    compared by Welch's interval of the difference."""
    rows = []
    for _, ours in table6_rows.iterrows():
        seed_scores = _seed_scores(scores, ours["game"], ours["variant"])
        row = {k: ours[k] for k in ("game", "algorithm", "variant", "variant_label", "n_seeds", "frames", "per_seed",
                                    "our_mean", "our_ci_low", "our_ci_high", "paper_mean")}
        random = lookup(random_human, ours["game"], "the verdict's equivalence margin")["random"]
        row["margin_low"], row["margin_high"] = equivalence_range(float(ours["paper_mean"]), float(random))
        ref = _independent_reference(references, ours["algorithm"], ours["game"])
        row |= {"ref_algo": "" if ref is None else ref["algo"],
                "ref_mean": math.nan if ref is None else float(ref["score"])}
        row |= _reference_difference(seed_scores, ref)
        row["verdict"] = verdict_line(row, paper_frames)
        rows.append(row)
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


def _wins(means: pd.DataFrame) -> tuple[pd.Series, int]:
    """``means``: games x competitors. Wins per competitor (highest value) and the number of exact ties."""
    best = means.max(axis=1)
    on_top = means.eq(best, axis=0)
    single = on_top.sum(axis=1) == 1
    return on_top[single].sum(axis=0).astype(int), int((~single).sum())


def win_counts(scores: pd.DataFrame, paper_wins: pd.DataFrame, paper: pd.DataFrame) -> pd.DataFrame:
    """Table 2 (:data:`TABLE2_COLUMNS`): per scoring metric, the games each variant wins, and ties.

    A game counts when every variant present has a scored run on it (``skipped_games`` lists the others);
    the winner has the highest mean over seeds, an exact tie of the highest means counts as ``tie``.
    ``paper_wins`` are the paper's counts (3 algorithms, 49 games); ``paper_table6_wins`` recounts the
    paper's Table 6 over our games and algorithms (last-100 metric only: it is the only one the paper
    publishes per game). Both are blank for a variant whose algorithm has other variants here.
    """
    scored = scores[np.isfinite(scores["score_last"].to_numpy(dtype=float))]
    names = _competitor_names(scores)
    labels = scores.groupby("variant")["variant_label"].first()
    algorithm_of = scores.groupby("variant")["algorithm"].first()
    variants = sorted(names.index, key=lambda v: (ALGORITHMS.index(algorithm_of[v]), v))
    unique_algorithm = {v: names[v] == algorithm_of[v] for v in variants}
    paper_algorithms = [a for a in ALGORITHMS if a in paper_wins.columns]
    rows = []
    for _, ref in paper_wins.iterrows():
        metric = ref["scoring_metric"]
        means = scored.groupby(["game", "variant"])[SCORE_COLUMNS[metric]].mean().unstack("variant")
        means = means.reindex(columns=variants)
        complete = means.notna().all(axis=1)
        skipped = sorted(set(scores["game"]) - set(means.index[complete]))
        means = means[complete]
        ours, our_ties = _wins(means)
        table6_wins, table6_ties = {}, math.nan
        if metric == LAST_100 and len(means):
            algorithms = sorted({algorithm_of[v] for v in variants if unique_algorithm[v]}, key=ALGORITHMS.index)
            values = paper.set_index("game").loc[means.index, algorithms] if algorithms else None
            if values is not None and len(algorithms) == len(variants):
                counts, table6_ties = _wins(values)
                table6_wins = counts.to_dict()
        paper_games = int(sum(ref[a] for a in paper_algorithms) + ref[TIE])
        competitors = ", ".join(names[v] for v in variants)
        same = set(names[v] for v in variants) == set(paper_algorithms) and len(means) == paper_games
        if same:
            comparable = "same algorithms and number of games as the paper"
        else:
            comparable = (
                f"paper counts are over {len(paper_algorithms)} algorithms ({', '.join(paper_algorithms)}) and "
                f"{paper_games} games; ours over {len(variants)} ({competitors}) and {len(means)} game(s): "
                "the counts are not comparable"
            )
            comparable += (
                "; paper_table6_wins recounts the paper's Table 6 over our games and algorithms"
                if metric == LAST_100 else "; the paper publishes no per-game values for this metric"
            )
        common = {
            "scoring_metric": metric, "n_games": len(means), "competitors": competitors,
            "paper_n_games": paper_games, "paper_algorithms": ", ".join(paper_algorithms),
            "skipped_games": "; ".join(skipped), "comparable": comparable,
        }
        for v in variants:
            alg = algorithm_of[v]
            rows.append(common | {
                "winner": names[v], "variant": v, "variant_label": labels[v], "our_wins": int(ours.get(v, 0)),
                "paper_wins": float(ref[alg]) if unique_algorithm[v] and alg in paper_algorithms else math.nan,
                "paper_table6_wins": float(table6_wins.get(alg, 0)) if table6_wins else math.nan,
            })
        rows.append(common | {
            "winner": TIE, "variant": "", "variant_label": "", "our_wins": our_ties, "paper_wins": float(ref[TIE]),
            "paper_table6_wins": float(table6_ties),
        })
    return pd.DataFrame(rows, columns=TABLE2_COLUMNS)


def human_normalized(scores: pd.DataFrame, random_human: pd.DataFrame) -> pd.DataFrame:
    """Per scored run (:data:`NORMALIZED_COLUMNS`): score (2) and (score − random) / (human − random)."""
    scored = scores[np.isfinite(scores["score_last"].to_numpy(dtype=float))]
    rows = []
    for _, run in scored.iterrows():
        scale = lookup(random_human, run["game"], "human normalisation")
        rows.append(
            {
                **{k: run[k] for k in ("game", "task", "algorithm", "variant", "variant_label", "seed", "status")},
                "score": run["score_last"],
                "random": scale["random"],
                "human": scale["human"],
                "normalized": (run["score_last"] - scale["random"]) / (scale["human"] - scale["random"]),
            }
        )
    return pd.DataFrame(rows, columns=NORMALIZED_COLUMNS)


def aggregate_table(
    normalized: pd.DataFrame,
    paper: pd.DataFrame,
    random_human: pd.DataFrame,
    scores: pd.DataFrame,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> pd.DataFrame:
    """Per variant (:data:`AGGREGATE_COLUMNS`): IQM, median, mean and optimality gap of the human-normalised
    score (2) over all its runs and games, with 95% stratified bootstrap intervals (runs resampled within
    each game; :func:`analysis.aggregate.aggregate_metrics`). Then, per algorithm of ``scores`` (every run
    of the study), the same statistics of the paper's Table 6 means over the games we scored (all the
    study's games when none was scored yet): one value per game, so no interval."""
    frames = []
    if not normalized.empty:
        ours = aggregate_metrics(normalized.assign(task=normalized["game"]), n_resamples, seed=seed)
        algorithm_of = normalized.groupby("variant")["algorithm"].first()
        diverged = normalized.assign(d=normalized["status"] == "diverged").groupby("variant")["d"].sum()
        frames.append(ours.rename(columns={"n_tasks": "n_games"}).assign(
            source="ours", algorithm=ours["variant"].map(algorithm_of),
            n_diverged=ours["variant"].map(diverged).astype(int),
        ))
    games = sorted(set(normalized["game"]) if not normalized.empty else set(scores["game"]))
    values = []
    for algorithm in [a for a in ALGORITHMS if a in set(scores["algorithm"])]:
        for game in games:
            ref, scale = lookup(paper, game, "Table 6"), lookup(random_human, game, "human normalisation")
            value = (ref[algorithm] - scale["random"]) / (scale["human"] - scale["random"])
            values.append({"task": game, "variant": f"paper {algorithm}", "variant_label": f"paper {algorithm}",
                           "seed": 0, "normalized": value})
    if values:
        theirs = aggregate_metrics(pd.DataFrame(values), n_resamples, seed=seed)
        frames.append(theirs.rename(columns={"n_tasks": "n_games"}).assign(
            source="paper Table 6, same games (one mean per game)",
            algorithm=theirs["variant"].str.removeprefix("paper "), variant="", n_diverged=math.nan,
        ))
    if not frames:
        return pd.DataFrame(columns=AGGREGATE_COLUMNS)
    out = pd.concat(frames, ignore_index=True).assign(human_table=human_table_source(random_human))
    out["n_diverged"] = out["n_diverged"].astype("Int64")  # blank, not NaN, on the paper rows
    out["_paper"] = out["source"] != "ours"
    out["_order"] = out["algorithm"].map({a: i for i, a in enumerate(ALGORITHMS)})
    out = out.sort_values(["_paper", "_order", "variant"], kind="stable").drop(columns=["_paper", "_order"])
    return out.reset_index(drop=True)[AGGREGATE_COLUMNS]


def atari_reference_metric(source: str, note: str) -> str:
    """The metric of an atari_reference_scores.csv row, read from its note (as Figure 3 does); the zoo
    notes say "single run ... evaluation episodes" in words the shared rules do not look for."""
    metric = reference_metric(source, note, note_only=True)
    text = str(note).lower()
    if metric == NOT_STATED and _SINGLE_RUN.search(text) and "evaluation episodes" in text:
        return "single-run final-agent eval"
    return metric


def _comparable(ref: pd.Series, task: str, frames: int, steps: int) -> str:
    """How a reference row differs from our result: env id, budget, metric, seeds."""
    env = _REF_ENV.search(str(ref["note"]))
    parts = [f"env {env.group(1).rstrip(';,')} vs our {task}" if env else f"env not stated vs our {task}"]
    parts.append(f"{ref['frames_or_steps']} vs our {format_steps(steps)} agent steps ({format_steps(frames)} frames)")
    metric = atari_reference_metric(ref["source"], ref["note"])
    parts.append(NOT_STATED if metric == NOT_STATED else
                 f"metric: {metric}" + (" (same as ours)" if metric == SAME_METRIC else ""))
    if _SINGLE_RUN.search(str(ref["note"])):
        parts.append("single run")
    return "; ".join(parts)


def reference_table(table6_rows: pd.DataFrame, scores: pd.DataFrame, references: pd.DataFrame) -> pd.DataFrame:
    """Our Table 6 rows beside every atari_reference_scores.csv row of the same game whose ``algo`` starts
    with the algorithm's name (ppo takes ppo2 and ppo2_mpi). Long format, one row per pair; a result with
    no reference keeps one row saying so (:data:`REFERENCE_TABLE_COLUMNS`)."""
    steps = scores.groupby(["game", "variant"])["steps"].max()
    rows = []
    for _, ours in table6_rows.iterrows():
        matches = algo_rows(references, ours["algorithm"])
        matches = matches[matches["game"] == ours["game"]]
        base = {k: ours[k] for k in ("game", "algorithm", "variant", "variant_label", "frames", "n_seeds",
                                     "our_mean", "our_ci_low", "our_ci_high", "paper_mean")}
        base["n_refs"] = len(matches)
        if matches.empty:
            rows.append(base | {"comparable": NO_REFERENCE})
        our_steps = int(steps.get((ours["game"], ours["variant"]), 0))
        seed_scores = _seed_scores(scores, ours["game"], ours["variant"])
        for _, ref in matches.iterrows():
            rows.append(base | _reference_difference(seed_scores, ref) | {
                "ref_source": ref["source"], "ref_algo": ref["algo"], "ref_frames_or_steps": ref["frames_or_steps"],
                "ref_score": ref["score"], "ref_metric": atari_reference_metric(ref["source"], ref["note"]),
                "ref_note": ref["note"], "comparable": _comparable(ref, ours["task"], ours["frames"], our_steps),
            })
    return pd.DataFrame(rows, columns=REFERENCE_TABLE_COLUMNS)
