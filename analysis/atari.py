"""The paper's Atari results (Sec 6.4), from our runs: what a score is, and the inputs of the tables.

Every run's manifest names its ``algorithm`` (one of :data:`ALGORITHMS`: Table 6's columns, then any other
line that trains Atari) and its
``env_protocol.frame_skip``; ``episode_return`` is the raw full-game score (all lives, unclipped). Per run:

- **score (1)**: mean ``episode_return`` over all its finished episodes ("over all of training");
- **score (2)**: mean over its last 100 episodes (fewer if it has fewer: ``n_last`` says how many), the
  score of Table 6, computed by :func:`analysis.scores.final_scores` as for Table 1;
- **frames**: its last ``global_step`` in ``updates.parquet`` (agent steps trained) × its frame skip.

Non-finite returns are dropped first; a run that diverged is scored on the episodes it finished and
counted in ``n_diverged`` (as Figure 3 does); a run with no finished episode has no score and is counted
in ``n_unscored``.

The tables (Table 6, Table 2, human-normalised aggregates, published references) are in
:mod:`analysis.atari_tables`, the learning curves in :mod:`analysis.atari_curves`; this module has the
names, the checks and loaders of the inputs, and the budget line.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Container, Iterable, Sequence
from pathlib import Path

import pandas as pd

from analysis import protocol
from analysis.io import RunDataError
from analysis.protocol import paper_values, seed_range
from analysis.references import format_steps
from ppo.config.registry import lines as algorithm_lines
from ppo.config.run_config import NETWORKS

PAPER_ALGORITHMS = ("a2c", "acer", "ppo")  # Table 6's columns, in its order: the published scores in reference/
# Every line that trains Atari (a convolutional network), as ppo/algorithms/<name>.py declares it; Table 6's
# first, in its order, which is also the display order.
ALGORITHMS = PAPER_ALGORITHMS + tuple(key for key, (spec, _) in algorithm_lines().items()
                                      if set(spec.networks) & set(NETWORKS[1:]) and key not in PAPER_ALGORITHMS)
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
_TASK = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")


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
    table = _read_csv(path, ["game", *PAPER_ALGORITHMS], PAPER_ALGORITHMS)
    if table["game"].duplicated().any():
        raise RunDataError(f"{path}: field 'game' repeats {table['game'][table['game'].duplicated()].iloc[0]!r}")
    return table


def load_table2(path: str | Path) -> pd.DataFrame:
    """ppo2017_table2_atari_wins.csv: one row per scoring metric, win counts per algorithm and ties."""
    table = _read_csv(path, ["scoring_metric", *PAPER_ALGORITHMS, TIE], [*PAPER_ALGORITHMS, TIE])
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


def lookup(table: pd.DataFrame, game: str, what: str) -> pd.Series:
    """The row of ``game``; a one-line error naming the file and field when there is none."""
    rows = table[table["game"] == game]
    if rows.empty:
        path = table.attrs.get("path", "reference table")
        raise RunDataError(f"{path}: field 'game' has no row {game!r} (task {game_task(game)}), needed for {what}")
    return rows.iloc[0]


# ---------------------------------------------------------------- budget


def paper_protocol(reference_dir: Path) -> dict:
    """The paper's Atari budget from ppo2017_hyperparameters.csv, falling back to :data:`PAPER`."""
    values = paper_values(reference_dir, "atari")
    names = {"frames": "game_frames", "steps": "timesteps", "seeds": "seeds_per_game", "games": "num_games"}
    out = dict(PAPER)
    for key, name in names.items():
        try:
            out[key] = int(float(values[name]))
        except (KeyError, ValueError):
            pass
    return out


def is_reduced(manifests: pd.DataFrame, paper_frames: float = PAPER["frames"]) -> bool:
    """True when any run says ``reduced`` or its budget (total_steps × frame skip) is below the paper's."""
    frames = pd.to_numeric(manifests["total_steps"], errors="coerce") * manifests["frame_skip"].astype(float)
    return protocol.is_reduced(manifests, frames, paper_frames)


def budget_line(manifests: pd.DataFrame, notes: Sequence[str] = (), paper: dict | None = None) -> str:
    """The budget printed on every output: the given notes, else steps, frames, seeds and games read from
    the runs (:func:`analysis.protocol.budget_line`)."""
    paper = {**PAPER, **(paper or {})}

    def describe() -> str:
        budgets = manifests.assign(frames=pd.to_numeric(manifests["total_steps"]) * manifests["frame_skip"])
        pairs = sorted({(int(s), int(f)) for s, f in zip(budgets["total_steps"], budgets["frames"])})
        return (
            f"{', '.join(f'{format_steps(s)} agent steps ({format_steps(f)} frames)' for s, f in pairs)} per run, "
            f"{seed_range(manifests, ['game', 'variant'])} seed(s) per game and algorithm, "
            f"{manifests['game'].nunique()} game(s) (paper: {format_steps(paper['steps'])} agent steps = "
            f"{format_steps(paper['frames'])} frames, {paper['seeds']} seeds, {paper['games']} games)"
        )

    return protocol.budget_line(notes, describe, is_reduced(manifests, paper["frames"]))
