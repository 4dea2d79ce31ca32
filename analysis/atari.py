"""The paper's Atari results (Sec 6.4): Table 6 (final score per game) and Table 2 (games won), from our runs.

Every run's manifest names its ``algorithm`` (one of :data:`ALGORITHMS`, the columns of Table 6) and its
``env_protocol.frame_skip``; ``episode_return`` is the raw full-game score (all lives, unclipped). Per run:

- **score (1)**: mean ``episode_return`` over all its finished episodes ("over all of training");
- **score (2)**: mean over its last 100 episodes (fewer if it has fewer: ``n_last`` says how many), the
  score of Table 6, computed by :func:`analysis.scores.final_scores` as for Table 1;
- **frames**: its last ``global_step`` in ``updates.parquet`` (agent steps trained) × its frame skip.

Non-finite returns are dropped first; a run that diverged is scored on the episodes it finished and
counted in ``n_diverged`` (as Figure 3 does); a run with no finished episode has no score and is counted
in ``n_unscored``.

Tables (pure functions of the loaded records and the reference CSVs):

- :func:`table6` one row per game and variant: mean over seeds of score (2) with a 95% percentile
  bootstrap interval over seeds, beside the paper's value for that algorithm;
- :func:`win_counts` (Table 2) per metric, the games each variant wins (highest mean over seeds among
  the variants present; an exact tie counts as ``tie``), beside the paper's counts;
- :func:`human_normalized` and :func:`aggregate_table`: (score − random) / (human − random) per run and
  IQM, median, mean and optimality gap per variant with stratified bootstrap intervals
  (:func:`analysis.aggregate.aggregate_metrics`, rliable's definitions);
- :func:`learning_curves_frames` and :func:`plot_atari_curves`: return against emulator frames;
- :func:`reference_table`: the rows of ``atari_reference_scores.csv`` for the same game and algorithm.

When several variants share an algorithm, each is its own competitor; paper counts (per algorithm) are
then left blank for them.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Container, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from analysis.aggregate import aggregate_metrics
from analysis.curves import learning_curves, new_figure, variant_colors
from analysis.io import RunDataError
from analysis.references import NOT_STATED, SAME_METRIC, algo_rows, format_steps, reference_metric
from analysis.scores import final_scores
from analysis.stats import bootstrap_ci, mean

ALGORITHMS = ("a2c", "acer", "ppo")  # Table 6's columns, in its order (also the display order)
WINDOW = 100  # episodes in score (2), Table 6's "last 100 episodes"
# The paper's protocol (Table 6 caption, Sec 6.4); the script reads them from ppo2017_hyperparameters.csv.
PAPER = {"frames": 40_000_000, "steps": 10_000_000, "seeds": 3, "games": 49}
# Table 2's metric names (ppo2017_table2_atari_wins.csv) -> our per-run column.
SCORE_COLUMNS = {
    "avg_episode_reward_over_all_of_training": "score_all",
    "avg_episode_reward_over_last_100_episodes": "score_last",
}
LAST_100 = "avg_episode_reward_over_last_100_episodes"
# The two random/human tables of atari_random_human.csv, by the start of their ``source``. Atari-57 is the
# default because it covers all 49 Table 6 games; DQN-Nature's 49 lack Pitfall (reference/SOURCES.md §5).
HUMAN_TABLES = {"atari57": "deepmind/dqn_zoo", "dqn_nature49": "Mnih et al. 2015"}
DEFAULT_HUMAN_TABLE = "atari57"
TIE = "tie"
NO_REFERENCE = "no published reference in reference/atari_reference_scores.csv"
_TASK = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")
_REF_ENV = re.compile(r"\benv ([A-Za-z0-9/_.-]+)")
_SINGLE_RUN = re.compile(r"single (training )?run", re.IGNORECASE)

RUN_COLUMNS = [
    "run_id", "game", "task", "algorithm", "variant", "variant_label", "seed", "status", "frame_skip",
    "steps", "frames", "n_episodes", "score_all", "score_last", "n_last",
]
TABLE6_COLUMNS = [
    "game", "task", "algorithm", "variant", "variant_label", "frames", "paper_frames", "n_seeds", "n_unscored",
    "n_diverged", "min_last_episodes", "our_mean", "our_ci_low", "our_ci_high", "paper_mean", "our_hns",
    "paper_hns",
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
    "paper_mean", "n_refs", "ref_source", "ref_algo", "ref_frames_or_steps", "ref_score", "ref_metric",
    "ref_note", "comparable",
]


# ---------------------------------------------------------------- names and inputs


def task_game(task: str) -> str:
    """``ALE/Pong-v5`` -> ``Pong`` (reference tables name games without namespace or version)."""
    match = _TASK.match(str(task))
    if match is None:
        raise ValueError(f"{task!r} is not an Atari id of the form 'ALE/<Game>-v5'")
    return match["game"]


def game_task(game: str) -> str:
    """``Pong`` -> ``ALE/Pong-v5``."""
    return f"ALE/{game}-v5"


def unregistered_games(games: Iterable[str], registry: Container[str]) -> list[str]:
    """The games whose ``ALE/<Game>-v5`` id is not in ``registry`` (e.g. ``gymnasium.registry``)."""
    return [g for g in games if game_task(g) not in registry]


def _manifest_file(row: pd.Series) -> str:
    run_dir = row.get("run_dir")
    return str(Path(run_dir) / "manifest.json") if isinstance(run_dir, str) else repr(row.get("run_id"))


def check_runs(manifests: pd.DataFrame) -> pd.DataFrame:
    """Validate the manifests and add a ``game`` column: every run names a known ``algorithm``, an
    ``ALE/<Game>-v5`` task, and every variant exactly one algorithm. Errors name the manifest and field."""
    for _, row in manifests.iterrows():
        algorithm = row.get("algorithm")
        if algorithm is None or (isinstance(algorithm, float) and math.isnan(algorithm)):
            raise RunDataError(f"manifest {_manifest_file(row)}: field 'algorithm' is missing "
                               f"(one of {list(ALGORITHMS)})")
        if algorithm not in ALGORITHMS:
            raise RunDataError(f"manifest {_manifest_file(row)}: field 'algorithm' is {algorithm!r}; "
                               f"expected one of {list(ALGORITHMS)}")
        if not _TASK.match(str(row["task"])):
            raise RunDataError(f"manifest {_manifest_file(row)}: field 'task' is {row['task']!r}, "
                               "not an Atari id of the form 'ALE/<Game>-v5'")
    pairs = manifests[["variant", "algorithm"]].drop_duplicates()
    clash = pairs["variant"][pairs["variant"].duplicated()]
    if not clash.empty:
        found = sorted(pairs.loc[pairs["variant"] == clash.iloc[0], "algorithm"])
        raise RunDataError(f"variant {clash.iloc[0]!r} has runs of several algorithms {found} (field 'algorithm')")
    return manifests.assign(game=manifests["task"].map(task_game))


def read_env_protocol(path: str | Path) -> dict:
    """``frame_skip`` (int >= 1) and ``protocol`` (name) from a manifest's ``env_protocol`` (the loaded
    manifest table drops nested fields, so they are read from the file)."""
    path = Path(path)
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError, RecursionError) as exc:  # ValueError: bad JSON or UTF-8
        raise RunDataError(f"manifest {path}: unreadable ({' '.join(str(exc).split())[:200]})") from exc
    protocol = manifest.get("env_protocol") if isinstance(manifest, dict) else None
    if not isinstance(protocol, dict):
        raise RunDataError(f"manifest {path}: field 'env_protocol' is missing or not a mapping")
    skip = protocol.get("frame_skip")
    if isinstance(skip, bool) or not isinstance(skip, int) or skip < 1:
        raise RunDataError(f"manifest {path}: field 'env_protocol.frame_skip' must be an integer >= 1, got {skip!r}")
    return {"frame_skip": skip, "protocol": str(protocol.get("protocol", "?"))}


def attach_env_protocol(manifests: pd.DataFrame) -> pd.DataFrame:
    """Add ``frame_skip`` and ``protocol`` columns, read from each run's ``run_dir/manifest.json``."""
    found = [read_env_protocol(Path(d) / "manifest.json") for d in manifests["run_dir"]]
    return manifests.assign(frame_skip=[f["frame_skip"] for f in found], protocol=[f["protocol"] for f in found])


def _read_csv(path: str | Path, columns: Sequence[str], numeric: Sequence[str] = ()) -> pd.DataFrame:
    """A reference CSV with its required columns; numeric ones must parse. ``attrs['path']`` keeps the file
    name for later error messages."""
    path = Path(path)
    if not path.is_file():
        raise RunDataError(f"missing reference file: {path}")
    try:
        table = pd.read_csv(path)
    except (ValueError, UnicodeDecodeError) as exc:  # pandas' ParserError is a ValueError
        raise RunDataError(f"{path}: unreadable CSV ({' '.join(str(exc).split())})") from exc
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise RunDataError(f"{path}: missing field(s) {missing}")
    for column in numeric:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = table.loc[values.isna(), column]
        if not bad.empty:
            raise RunDataError(f"{path}: field {column!r} has a non-numeric value {bad.iloc[0]!r} "
                               f"(row {bad.index[0] + 2})")
        table[column] = values.astype(float)
    table.attrs["path"] = str(path)
    return table


def load_table6(path: str | Path) -> pd.DataFrame:
    """ppo2017_table6_atari.csv: ``game`` and one column per algorithm."""
    table = _read_csv(path, ["game", *ALGORITHMS], ALGORITHMS)
    if table["game"].duplicated().any():
        raise RunDataError(f"{path}: field 'game' repeats {table['game'][table['game'].duplicated()].iloc[0]!r}")
    return table


def load_table2(path: str | Path) -> pd.DataFrame:
    """ppo2017_table2_atari_wins.csv: one row per scoring metric, win counts per algorithm and ties."""
    table = _read_csv(path, ["scoring_metric", *ALGORITHMS, TIE], [*ALGORITHMS, TIE])
    unknown = sorted(set(table["scoring_metric"]) - set(SCORE_COLUMNS))
    if unknown:
        raise RunDataError(f"{path}: field 'scoring_metric' has unknown value(s) {unknown}; "
                           f"expected {sorted(SCORE_COLUMNS)}")
    return table


def load_random_human(path: str | Path, table: str = DEFAULT_HUMAN_TABLE) -> pd.DataFrame:
    """The rows of atari_random_human.csv from one of its tables (:data:`HUMAN_TABLES`)."""
    if table not in HUMAN_TABLES:
        raise RunDataError(f"unknown random/human table {table!r}; choose one of {sorted(HUMAN_TABLES)}")
    rows = _read_csv(path, ["game", "random", "human", "source"], ["random", "human"])
    rows = rows[rows["source"].astype(str).str.startswith(HUMAN_TABLES[table])].reset_index(drop=True)
    rows.attrs["path"] = str(path)
    if rows.empty:
        raise RunDataError(f"{path}: field 'source' has no row starting with {HUMAN_TABLES[table]!r} ({table})")
    if rows["game"].duplicated().any():
        raise RunDataError(f"{path}: field 'game' repeats {rows['game'][rows['game'].duplicated()].iloc[0]!r} "
                           f"within the {table} table")
    flat = rows.loc[rows["human"] == rows["random"], "game"]
    if not flat.empty:
        raise RunDataError(f"{path}: fields 'human' and 'random' are equal for {flat.iloc[0]!r}: cannot normalise")
    return rows


def human_table_source(random_human: pd.DataFrame) -> str:
    """The table's source text without per-game remarks (after '; NOTE')."""
    sources = sorted({str(s).split("; NOTE")[0] for s in random_human["source"]})
    return " / ".join(sources)


def load_atari_references(path: str | Path) -> pd.DataFrame:
    """atari_reference_scores.csv (source, game, algo, frames_or_steps, score, note)."""
    return _read_csv(path, ["source", "game", "algo", "frames_or_steps", "score", "note"], ["score"])


def _lookup(table: pd.DataFrame, game: str, what: str) -> pd.Series:
    """The row of ``game``; a one-line error naming the file and field when there is none."""
    rows = table[table["game"] == game]
    if rows.empty:
        path = table.attrs.get("path", "reference table")
        raise RunDataError(f"{path}: field 'game' has no row {game!r} (task {game_task(game)}), needed for {what}")
    return rows.iloc[0]


# ---------------------------------------------------------------- per run


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


# ---------------------------------------------------------------- Table 6


def table6(
    scores: pd.DataFrame,
    paper: pd.DataFrame,
    random_human: pd.DataFrame | None = None,
    n_resamples: int = 10_000,
    seed: int = 0,
    paper_frames: float = PAPER["frames"],
) -> pd.DataFrame:
    """Per game and variant (:data:`TABLE6_COLUMNS`): mean over seeds of score (2) with its 95% percentile
    bootstrap interval over seeds (NaN with one seed), beside the paper's Table 6 value of its algorithm.

    ``frames`` is the most any seed trained (a diverged run trains fewer: ``n_diverged``); ``n_seeds``
    counts scored runs, ``n_unscored`` runs without a finished episode; ``min_last_episodes`` is the fewest
    episodes in a seed's score (100 unless a run finished fewer). ``our_hns`` and ``paper_hns`` are the
    human-normalised means when ``random_human`` is given."""
    rows = []
    for (game, variant), group in scores.groupby(["game", "variant"], sort=True):
        ref = _lookup(paper, game, "Table 6")
        algorithm = group["algorithm"].iloc[0]
        scored = group[np.isfinite(group["score_last"].to_numpy(dtype=float))]
        if len(scored):
            ci = bootstrap_ci(scored["score_last"].to_numpy(), mean, n_resamples, seed=seed)
            point, low, high = ci.point, ci.low, ci.high
        else:
            point = low = high = math.nan
        hns = paper_hns = math.nan
        if random_human is not None:
            scale = _lookup(random_human, game, "human normalisation")
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
                "our_mean": point,
                "our_ci_low": low,
                "our_ci_high": high,
                "paper_mean": float(ref[algorithm]),
                "our_hns": hns,
                "paper_hns": paper_hns,
            }
        )
    return _sorted(pd.DataFrame(rows, columns=TABLE6_COLUMNS), ["game", "variant"])


# ---------------------------------------------------------------- Table 2


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


# ---------------------------------------------------------------- human-normalised aggregates


def human_normalized(scores: pd.DataFrame, random_human: pd.DataFrame) -> pd.DataFrame:
    """Per scored run (:data:`NORMALIZED_COLUMNS`): score (2) and (score − random) / (human − random)."""
    scored = scores[np.isfinite(scores["score_last"].to_numpy(dtype=float))]
    rows = []
    for _, run in scored.iterrows():
        scale = _lookup(random_human, run["game"], "human normalisation")
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
            ref, scale = _lookup(paper, game, "Table 6"), _lookup(random_human, game, "human normalisation")
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


# ---------------------------------------------------------------- learning curves


def default_games(manifests: pd.DataFrame, limit: int = 6) -> list[str]:
    """The study's games in name order, at most ``limit``."""
    return sorted(manifests["game"].unique())[:limit]


def learning_curves_frames(
    episodes: pd.DataFrame,
    manifests: pd.DataFrame,
    games: Sequence[str],
    n_points: int = 100,
    smooth: int = 10,
    n_resamples: int = 2_000,
    seed: int = 0,
) -> pd.DataFrame:
    """:func:`analysis.curves.learning_curves` over emulator frames for ``games``: each run's steps
    (episodes, ``total_steps``, ``diverged_at_step``) are scaled by its frame skip; the x column is
    ``frames``. Columns ``game, task, variant, variant_label, frames, mean, ci_low, ci_high, n_runs``."""
    unknown = sorted(set(games) - set(manifests["game"]))
    if unknown:
        raise RunDataError(f"game(s) {unknown} chosen for the curves are not in the study "
                           f"(have {sorted(manifests['game'].unique())})")
    runs = manifests[manifests["game"].isin(list(games))].copy()
    skip = runs.set_index("run_id")["frame_skip"].astype(float)
    for column in ("total_steps", "diverged_at_step"):
        if column in runs.columns:
            runs[column] = pd.to_numeric(runs[column], errors="coerce") * runs["frame_skip"].astype(float)
    eps = episodes[episodes["run_id"].isin(runs["run_id"])].copy()
    eps["global_step"] = eps["global_step"].to_numpy(dtype=float) * eps["run_id"].map(skip).to_numpy(dtype=float)
    curves = learning_curves(eps, runs, "global_step", n_points, smooth, n_resamples, seed=seed)
    curves = curves.rename(columns={"global_step": "frames"})
    curves.insert(0, "game", curves["task"].map(task_game))
    return curves


def plot_atari_curves(curves: pd.DataFrame, path: str | Path, title: str) -> Path:
    """One panel per game, one line per variant with its band, x = emulator frames; saved with Agg."""
    games = list(dict.fromkeys(sorted(curves["game"])))
    variants = sorted(curves["variant"].unique())
    labels = curves.groupby("variant")["variant_label"].first()
    colors = variant_colors(variants)
    ncols = min(3, max(1, len(games)))
    nrows = max(1, math.ceil(len(games) / ncols))
    width = max(4.4 * ncols, 7.5)  # room for the budget line in the title
    fig, axes = new_figure((width, 3.3 * nrows + 1.2), nrows, ncols)
    for ax, game in zip(axes, games):
        for variant in variants:
            line = curves[(curves["game"] == game) & (curves["variant"] == variant)]
            if line.empty:
                continue
            ax.plot(line["frames"], line["mean"], color=colors[variant], lw=1.4, label=labels[variant])
            ax.fill_between(line["frames"], line["ci_low"], line["ci_high"], color=colors[variant], alpha=0.2, lw=0)
        if not np.isfinite(curves.loc[curves["game"] == game, "mean"].to_numpy(dtype=float)).any():
            ax.text(0.5, 0.5, "no finished episode yet", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlim(0, max(1.0, float(curves.loc[curves["game"] == game, "frames"].max())))
        ax.set_title(game)
        ax.set_xlabel("emulator frames (agent steps × frame skip)")
        ax.set_ylabel("raw game score per episode")
    for ax in axes[len(games):]:
        ax.set_visible(False)
    handles = [Line2D([], [], color=colors[v], lw=2, label=labels[v]) for v in variants]
    if handles:
        fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(variants)), fontsize="small")
    # A long budget line would run off a narrow figure: wrap every title line to its width.
    chars = int(width * 10)  # about 10 title characters per inch
    fig.suptitle("\n".join(textwrap.fill(line, chars) for line in title.splitlines()))
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    return path


# ---------------------------------------------------------------- published references


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
        for _, ref in matches.iterrows():
            rows.append(base | {
                "ref_source": ref["source"], "ref_algo": ref["algo"], "ref_frames_or_steps": ref["frames_or_steps"],
                "ref_score": ref["score"], "ref_metric": atari_reference_metric(ref["source"], ref["note"]),
                "ref_note": ref["note"], "comparable": _comparable(ref, ours["task"], ours["frames"], our_steps),
            })
    return pd.DataFrame(rows, columns=REFERENCE_TABLE_COLUMNS)


# ---------------------------------------------------------------- budget


def is_reduced(manifests: pd.DataFrame, paper_frames: float = PAPER["frames"]) -> bool:
    """True when any run says ``reduced`` or its budget (total_steps × frame skip) is below the paper's."""
    flagged = "reduced" in manifests.columns and bool(manifests["reduced"].fillna(False).astype(bool).any())
    frames = pd.to_numeric(manifests["total_steps"], errors="coerce") * manifests["frame_skip"].astype(float)
    return flagged or bool((frames.dropna() < paper_frames).any())


def budget_line(manifests: pd.DataFrame, notes: Sequence[str] = (), paper: dict | None = None) -> str:
    """The budget printed on every output: the given notes, else steps, frames, seeds and games read from
    the runs. A reduced study always starts with ``REDUCED BUDGET`` unless its note says so already."""
    paper = {**PAPER, **(paper or {})}
    if notes:
        line = " | ".join(" ".join(str(n).split()) for n in notes)
    else:
        budgets = manifests.assign(frames=pd.to_numeric(manifests["total_steps"]) * manifests["frame_skip"])
        pairs = sorted({(int(s), int(f)) for s, f in zip(budgets["total_steps"], budgets["frames"])})
        seeds = manifests.groupby(["game", "variant"])["seed"].nunique()
        seed_text = f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"
        line = (
            f"{', '.join(f'{format_steps(s)} agent steps ({format_steps(f)} frames)' for s, f in pairs)} per run, "
            f"{seed_text} seed(s) per game and algorithm, {manifests['game'].nunique()} game(s) (paper: "
            f"{format_steps(paper['steps'])} agent steps = {format_steps(paper['frames'])} frames, "
            f"{paper['seeds']} seeds, {paper['games']} games)"
        )
    if is_reduced(manifests, paper["frames"]) and "reduced" not in line.lower():
        line = f"REDUCED BUDGET: {line}"
    return line
