"""The paper's protocol beside ours: the budget line every report prints, and the MuJoCo reports' notes on
how our runs differ from the paper (Table 1 and Figure 3 share them)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

from analysis.io import load_random
from analysis.references import format_steps


def paper_values(reference_dir: Path, domain: str) -> dict[str, str]:
    """name -> value of the ``domain`` rows ("mujoco", "atari") of ppo2017_hyperparameters.csv; {} without it."""
    path = Path(reference_dir) / "ppo2017_hyperparameters.csv"
    if not path.is_file():
        return {}
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    rows = table[table["domain"] == domain]
    return dict(zip(rows["name"], rows["value"]))


def paper_task_names(reference_dir: Path) -> set[str]:
    """The tasks of the paper's MuJoCo experiments by name, without version ("Hopper"); empty without the row."""
    environments = paper_values(reference_dir, "mujoco").get("environments", "")
    return {e.rsplit("-", 1)[0] for e in environments.split(";") if "-" in e}


NO_PAPER_NUMBERS = ("The paper has no experiments on these tasks (its Table 1 is on seven MuJoCo tasks): no number "
                    "here is compared with the paper's.")


def outside_paper(tasks, reference_dir: Path) -> bool:
    """True when none of ``tasks`` (ids such as "CartPole-v1") is a task of the paper's MuJoCo experiments, so
    the paper's numbers say nothing about them; False when the reference does not list the paper's tasks."""
    names = paper_task_names(reference_dir)
    return bool(names) and not ({str(t).rsplit("-", 1)[0] for t in tasks} & names)


def seed_range(manifests: pd.DataFrame, by: Sequence[str]) -> str:
    """Seeds per ``by`` group: ``3``, or ``2-3`` when groups differ."""
    seeds = manifests.groupby(list(by))["seed"].nunique()
    return f"{seeds.min()}" if seeds.min() == seeds.max() else f"{seeds.min()}-{seeds.max()}"


def is_reduced(manifests: pd.DataFrame, budgets: pd.Series, paper_budget: float) -> bool:
    """True when any run says ``reduced`` or its budget (``budgets``, one per run) is below the paper's."""
    flagged = "reduced" in manifests.columns and bool(manifests["reduced"].fillna(False).astype(bool).any())
    return flagged or bool((budgets.dropna() < paper_budget).any())


def budget_line(notes: Sequence[str], describe: Callable[[], str], reduced: bool) -> str:
    """The budget printed on every output: the given notes, else ``describe()`` (read from the runs). A
    reduced study's line always starts with ``REDUCED BUDGET`` unless it says so already."""
    line = " | ".join(" ".join(str(n).split()) for n in notes) if notes else describe()
    if reduced and "reduced" not in line.lower():
        line = f"REDUCED BUDGET: {line}"
    return line


def steps_budget_line(manifests: pd.DataFrame, notes: Sequence[str], paper_steps: float, paper_seeds: object,
                      per: str) -> str:
    """:func:`budget_line` of a study of environment steps (MuJoCo, classic control): the given notes, else
    the steps and seeds read from the runs, seeds counted per task and variant (``per`` names a variant:
    algorithm, setting)."""
    def describe() -> str:
        steps = sorted(manifests["total_steps"].dropna().astype(int).unique()) if "total_steps" in manifests else []
        return (f"{', '.join(format_steps(s) for s in steps) or '?'} env steps per run, "
                f"{seed_range(manifests, ['task', 'variant'])} seed(s) per task and {per} "
                f"(paper: {format_steps(paper_steps)} steps, {paper_seeds} seeds)")

    steps = manifests["total_steps"] if "total_steps" in manifests.columns else pd.Series(dtype=float)
    return budget_line(notes, describe, is_reduced(manifests, steps, paper_steps))


def difference_notes(
    manifests: pd.DataFrame,
    scores: pd.DataFrame,
    random_files: Sequence[Path],
    reference_dir: Path,
    window: int,
    extra: Sequence[str],
) -> list[str]:
    """Differences from the paper's Sec 6.1 protocol, read from the runs themselves."""
    paper = paper_values(reference_dir, "mujoco")
    notes = []
    steps = sorted(manifests["total_steps"].dropna().astype(int).unique()) if "total_steps" in manifests else []
    if outside_paper(manifests["task"].unique(), reference_dir):  # e.g. CartPole-v1: nothing of the paper's applies
        ours = ", ".join(format_steps(s) for s in steps) or "?"
        return [
            f"Tasks: {', '.join(sorted(manifests['task'].astype(str).unique()))}. {NO_PAPER_NUMBERS}",
            f"Training budget: {ours} env steps per run; seeds per task and setting: "
            f"{seed_range(manifests, ['task', 'variant'])}.",
            *notes_shared_with_paper(manifests, scores, random_files, window),
            *extra,
        ]
    if steps:
        ours = ", ".join(format_steps(s) for s in steps)
        theirs = format_steps(float(paper["total_timesteps"])) if paper.get("total_timesteps") else "?"
        same = " (same as the paper)" if ours == theirs else f" (paper: {theirs})"
        notes.append(f"Training budget: {ours} env steps per run{same}.")
    if "env_version" in manifests:
        versions = ", ".join(sorted(manifests["env_version"].astype(str).unique()))
        paper_envs = paper.get("environments", "")
        paper_versions = sorted({e.rsplit("-", 1)[-1] for e in paper_envs.split(";") if "-" in e})
        notes.append(
            f"Environments: Gymnasium MuJoCo {versions} (paper: Gym {', '.join(paper_versions) or '?'})."
        )
        if paper_envs:
            paper_tasks = {e.rsplit("-", 1)[0] for e in paper_envs.split(";")}
            our_tasks = {t.rsplit("-", 1)[0] for t in manifests["task"]}
            if our_tasks != paper_tasks:
                notes.append(
                    f"Tasks: {', '.join(sorted(our_tasks))} "
                    f"(paper: {', '.join(sorted(paper_tasks))})."
                )
    notes.append(f"Seeds per task and setting: {seed_range(manifests, ['task', 'variant'])} (paper: {paper.get('seeds_per_env', '?')}).")
    return notes + notes_shared_with_paper(manifests, scores, random_files, window) + list(extra)


INTERVALS_NOTE = (
    "Intervals: per task, a 95% Student t interval of the mean over its n seeds (n − 1 degrees of freedom; a "
    "percentile bootstrap over 3 seeds would give their range, about 75% coverage); a mean over tasks (Table 1's "
    "score), a 95% t interval stratified over tasks (each task's own variance over seeds, Welch–Satterthwaite "
    "degrees of freedom); a difference between two sets of runs, Welch's 95% interval, and 'identical' when both "
    "sides are the same runs. IQM, median, optimality gap, performance profiles and probability of improvement: "
    "95% percentile bootstrap over runs stratified by task (Agarwal et al. 2021), narrower than 95% at 3 seeds per "
    "task. No interval with one seed. From 5 seeds in every (setting, task) cell (analysis.stats.BOOTSTRAP_FROM) a "
    "mean over tasks and a difference of two settings over tasks take the studentized bootstrap stratified over tasks "
    "instead of the t interval (the percentile bootstrap still falls short of 95% at 10 seeds); each table's "
    "'Seeds' note names its method."
)
ONE_SETTING = ("One setting only: no normalised score (every task's best setting would be this one, 1.00 by "
               "construction); the raw scores per task are the result.")


def not_above_random(scores: pd.DataFrame, random_scores: pd.Series) -> pd.DataFrame:
    """The scored runs whose final score is not above our random policy's on their task (a run that never learned,
    diverged or not); tasks without a random score are left out."""
    random = scores["task"].map(random_scores)
    return scores[random.notna() & (scores["score"] <= random)]


def notes_shared_with_paper(manifests: pd.DataFrame, scores: pd.DataFrame, random_files: Sequence[Path],
                            window: int) -> list[str]:
    """The notes on score, normalisation, intervals and left-out runs, whether or not the tasks are the paper's."""
    notes = [
        f"Score: mean return of each run's last {window} training episodes, as in the paper; "
        "diverged runs are scored on the episodes they finished before diverging.",
        "Normalisation: random score = mean return of our own random-policy episodes "
        f"({', '.join(p.name for p in random_files)}); best = our best setting per task "
        "(the paper publishes neither).",
        INTERVALS_NOTE,
    ]
    if manifests["variant"].nunique() == 1:
        notes.append(ONE_SETTING)
    n_diverged = int((manifests["status"] == "diverged").sum())
    if n_diverged:
        notes.append(f"{n_diverged} of {len(manifests)} runs diverged.")
    files = [Path(f) for f in random_files]
    if files and all(f.is_file() for f in files) and not scores.empty:
        failed = not_above_random(scores, load_random(files))
        where = "; ".join(f"{v} on {t}: {len(g)}" for (v, t), g in failed.groupby(["variant", "task"]))
        notes.append(f"{len(failed)} of {len(scores)} scored runs end no better than our random policy (final "
                     f"score ≤ its score on the task){': ' + where if where else ''}.")
    unscored = sorted(set(manifests["run_id"]) - set(scores["run_id"]))
    if unscored:
        notes.append(f"Runs with no finished episode, left out: {', '.join(unscored)}.")
    return notes
