#!/usr/bin/env python
"""The Atari half of the paper at its budget (issue 33) as a page, docs/atari-results.md, written from the published
records (published/atari/paper/runs, ppo.pipeline.publish) with the Atari report's own analysis
(analysis/atari_tables.py), never typed by hand:

    python scripts/atari_results.py                          # published/ -> docs/atari-results.md
    python scripts/atari_results.py --published DIR --out FILE
    python scripts/atari_results.py --readme                 # also README.md's Atari table (README_BEGIN..README_END)

All generated, like docs/rlhf-results.md: tests/pipeline/test_atari_results.py regenerates it from published/ and
compares the whole file, and ``scripts/paper_grid.sh`` with GRID_NAME=atari writes it again and commits it in the same
commit as the runs it publishes, so the page and the records never disagree on main.

What it shows: which of ./repro atari-three's runs are published (a partial grid says so); Table 6 per game and
algorithm (each seed's last-100 score, the mean with its 95% Student-t interval, the paper's value, CleanRL's
ppo_atari.py beside PPO, the verdict by analysis.atari_tables.verdicts' rule); every reference of
reference/atari_reference_scores.csv for these games; Table 2's two metrics per run; each run's learning curve as the
mean raw score of the episodes that ended in each million agent steps; and where each run trained (the parts of a run
resumed from checkpoints, their processors, commits and torch builds). With no records it says so and reports nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.atari import (attach_env_protocol, check_runs, load_atari_references, load_random_human,  # noqa: E402
                           load_table6, task_game)
from analysis.atari_tables import VERDICT_RULE, reference_table, run_scores, table6, verdicts  # noqa: E402
from analysis.io import load_study as load_runs  # noqa: E402
from analysis.report_tables import replace_between, to_markdown  # noqa: E402
from ppo.pipeline.study import load_study  # noqa: E402
from ppo.training.driver import resumed_elsewhere  # noqa: E402

PAGE = ROOT / "docs" / "atari-results.md"
SCALE = "paper"
# Checks of the disagreements, beside the atari study: Breakout's PPO (experiments/studies/atari_checks.yaml) and
# A2C on Pong and BeamRider (atari_checks_a2c.yaml), each on the Nature CNN; A2C at the SB3 zoo's settings on Pong
# (atari_checks_a2c_zoo.yaml), first, as it decides whether our A2C is sound
CHECKS = ("atari_checks_a2c_zoo", "atari_checks", "atari_checks_a2c")
# A check variant trained at another library's published settings, and that library's row of
# reference/atari_reference_scores.csv (its `algo` field): the score the check is set beside
SETTINGS_REFERENCE = {"atari_a2c_sb3_zoo": "a2c (SB3, zoo hyperparameters hyperparams/a2c.yml atari)"}
CURVE_BIN = 1_000_000  # agent steps per column of the learning-curve table
REFERENCES = ROOT / "reference"
README = ROOT / "README.md"
# README.md's Atari table lies between these lines, written by readme_table (tests/pipeline/test_atari_results.py
# compares it with the records, so the README cannot keep a count or a score the records no longer hold)
README_BEGIN = "<!-- atari table: written by python scripts/atari_results.py --readme from published/; do not edit -->"
README_END = "<!-- end of the atari table -->"


def fmt(x, digits: int = 1) -> str:
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:,.{digits}f}"


def markdown(frame: pd.DataFrame) -> str:
    return to_markdown(frame).rstrip("\n")  # analysis.report_tables: the reports' own table writer


def planned_runs() -> pd.DataFrame:
    """./repro atari-three's runs: the atari study's selection ``three`` at the paper's scale (game, variant, seed)."""
    study = load_study("atari", SCALE)
    tasks, variants = study.selection("three")
    return pd.DataFrame([(task_game(t), v, s) for t in tasks for v in variants for s in range(study.seeds)],
                        columns=["game", "variant", "seed"])


def planned_budget() -> int:
    """Agent steps per run at the paper's scale."""
    return load_study("atari", SCALE).total_steps


def records(published: Path):
    """(scores, manifests, episodes) of the published Atari runs at the paper's scale; None while none is."""
    runs_dir = published / "atari" / SCALE / "runs"
    if not runs_dir.is_dir() or not any(runs_dir.rglob("manifest.json")):
        return None
    episodes, updates, manifests = load_runs(runs_dir, update_columns=("update", "global_step"))
    manifests = attach_env_protocol(check_runs(manifests))
    return run_scores(episodes, manifests, updates), manifests, episodes


def run_keys(runs: pd.DataFrame) -> set[tuple]:
    """The (game, variant, seed) of each row: a published run or a planned one."""
    return set(zip(runs["game"], runs["variant"], runs["seed"]))


def table6_with_verdicts(scores: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 6's rows for the published scores and their verdicts (analysis.atari_tables.verdicts)."""
    rows6 = table6(scores, load_table6(REFERENCES / "ppo2017_table6_atari.csv"))
    return rows6, verdicts(rows6, scores, load_atari_references(REFERENCES / "atari_reference_scores.csv"),
                           load_random_human(REFERENCES / "atari_random_human.csv"))


def progress_section(scores: pd.DataFrame, planned: pd.DataFrame) -> list[str]:
    done, wanted = run_keys(scores), run_keys(planned)
    rows = [{"game": game, "variant": variant, "of": len(group),
             "published seeds": ", ".join(str(s) for s in group["seed"] if (game, variant, s) in done) or "none"}
            for (game, variant), group in planned.groupby(["game", "variant"], sort=True)]
    extra = len(done - wanted)
    how = ("trained by `scripts/paper_grid.sh` with GRID_NAME=atari, PPO first, then A2C" if done >= wanted else
           "PPO first, then A2C; `scripts/paper_grid.sh` with GRID_NAME=atari trains the rest and publishes each as it "
           "finishes")
    lines = [f"**{len(done & wanted)} of the {len(planned)} runs of `./repro atari-three` are published** ({how})"
             + (f"; {extra} more published run(s) outside that selection are in the tables below." if extra else ".")]
    return lines + ["", markdown(pd.DataFrame(rows)[["game", "variant", "published seeds", "of"]]), ""]


def table6_section(rows6: pd.DataFrame, lines: pd.DataFrame) -> list[str]:
    shown = pd.DataFrame({
        "game": lines["game"], "algorithm": lines["variant_label"], "seeds: last-100 score": lines["per_seed"],
        "mean (95% t interval)": [fmt(m) + ("" if not math.isfinite(lo) else f" ({fmt(lo)} to {fmt(hi)})")
                                  for m, lo, hi in zip(lines["our_mean"], lines["our_ci_low"], lines["our_ci_high"])],
        "paper": [fmt(v) for v in lines["paper_mean"]],
        "CleanRL mean ± std (n)": [f"{fmt(m)} ± {fmt(s)} ({int(n)})" if math.isfinite(m) and math.isfinite(s) else ""
                                   for m, s, n in zip(lines["ref_mean"], lines["ref_sd"],
                                                      lines["ref_n"].fillna(0))],
        "verdict": lines["verdict"],
    })
    all_mean = rows6.set_index(["game", "variant_label"])["our_all_mean"]
    return ["## Table 6: the last 100 episodes, beside the paper", "",
            "Score: the mean raw game score (all lives, never the clipped reward) of a run's last 100 training "
            "episodes. The interval is Student's t over the seeds (n − 1 degrees of freedom): at 2 seeds it spans "
            "12.7 standard errors each side, at 3 seeds 4.30 — wide, but its coverage holds for normal seed scores, where a bootstrap "
            "interval over 3 seeds is their range (about 75 %). Rule (analysis.atari_tables.verdicts): "
            + VERDICT_RULE + "; CleanRL's `ppo_atari.py` (3 seeds, NoFrameskip-v4) is compared by Welch's "
            "interval of the difference.", "", markdown(shown), "",
            "Table 2's other metric, the mean over all training episodes, averaged over seeds: "
            + "; ".join(f"{g} {v}: {fmt(x)}" for (g, v), x in all_mean.items()) + ".", ""]


def references_section(rows6: pd.DataFrame, scores: pd.DataFrame) -> list[str]:
    refs = reference_table(rows6, scores, load_atari_references(REFERENCES / "atari_reference_scores.csv"))
    refs = refs[refs["n_refs"] > 0]
    if refs.empty:
        return []
    shown = pd.DataFrame({
        "game": refs["game"], "reference": refs["ref_algo"], "budget": refs["ref_frames_or_steps"],
        "its score": [fmt(float(s)) for s in refs["ref_score"]],
        "ours − it (Welch 95%)": [f"{fmt(d)} ({fmt(lo)} to {fmt(hi)})" if math.isfinite(lo) else ""
                                  for d, lo, hi in zip(refs["diff_vs_ref"], refs["diff_ci_low"], refs["diff_ci_high"])],
        "its metric": refs["ref_metric"],
    })
    return ["## Beside other reproductions", "",
            "Every row of reference/atari_reference_scores.csv for these games and algorithms (source, environment "
            "and protocol in its note column; analysis.atari_tables.reference_table, which also says how each compares "
            "with ours). The difference has an interval only where the reference states its spread and seed count and "
            "we have 2 or more seeds.", "", markdown(shown), ""]


def runs_section(scores: pd.DataFrame) -> list[str]:
    shown = pd.DataFrame({
        "game": scores["game"], "algorithm": scores["variant_label"], "seed": scores["seed"],
        "agent steps": [f"{int(s):,}" for s in scores["steps"]], "episodes": scores["n_episodes"],
        "all episodes (Table 2, 1)": [fmt(v) for v in scores["score_all"]],
        "last 100 (Table 2, 2)": [fmt(v) for v in scores["score_last"]],
    })
    return ["## Each run: Table 2's two metrics", "", markdown(shown), ""]


def curves_section(scores: pd.DataFrame, episodes: pd.DataFrame) -> list[str]:
    """Each run's mean raw score of the episodes that ended in each CURVE_BIN of agent steps, and per game and
    algorithm the mean over its seeds (of the seeds with an episode in that bin)."""
    eps = episodes[np.isfinite(episodes["episode_return"].to_numpy(dtype=float))].copy()
    # the budget in bins (10M agent steps: 10); the last update overshoots the budget by < one batch: last bin
    n_bins = int(math.ceil(int(planned_budget()) / CURVE_BIN))
    eps["bin"] = np.minimum((eps["global_step"].to_numpy(dtype=np.int64) - 1) // CURVE_BIN, n_bins - 1)
    labels = [f"{(b + 1) * CURVE_BIN // 1_000_000}M" for b in range(n_bins)]
    means = eps.groupby(["run_id", "bin"])["episode_return"].mean()
    rows = []
    for (game, label), group in scores.groupby(["game", "variant_label"], sort=True):
        per_seed = []
        for run in group.itertuples():
            values = [means.get((run.run_id, b), math.nan) for b in range(n_bins)]
            per_seed.append(values)
            rows.append({"game": game, "algorithm": label, "seed": f"s{run.seed}", **dict(zip(labels, map(fmt, values)))})
        if len(per_seed) > 1:
            values = np.array(per_seed, dtype=float)
            seen = np.isfinite(values).sum(axis=0)
            mean = np.where(seen > 0, np.nansum(values, axis=0) / np.maximum(seen, 1), np.nan)
            rows.append({"game": game, "algorithm": label, "seed": "mean", **dict(zip(labels, map(fmt, mean)))})
    return ["## Learning curves, as numbers", "",
            f"The mean raw score of the episodes that ended in each {CURVE_BIN:,} agent steps "
            f"({4 * CURVE_BIN // 1_000_000}M frames), per seed and their mean; the figure is `atari_curves.png` of "
            "`./repro atari-published`.", "", markdown(pd.DataFrame(rows)), ""]


DIAGNOSTICS = {"entropy": "policy entropy", "explained_variance": "explained variance", "approx_kl": "approx. KL",
               "clipfrac": "clip fraction", "value_loss": "value loss"}  # updates.parquet columns, where an algorithm logs them


def diagnostics_section(scores: pd.DataFrame, manifests: pd.DataFrame, episodes: pd.DataFrame) -> list[str]:
    """Per run, what its updates and episodes looked like in the first and in the last CURVE_BIN agent steps: the
    episode length beside the training statistics an algorithm logs (a column it does not log stays blank)."""
    last_from = planned_budget() - CURVE_BIN
    rows = []
    for m in manifests.sort_values(["game", "variant", "seed"]).itertuples():
        updates = pd.read_parquet(Path(m.run_dir) / "updates.parquet")  # the record load_runs checked above
        eps = episodes[episodes["run_id"] == m.run_id]
        row = {"game": m.game, "algorithm": m.variant_label, "seed": m.seed}

        def early_late(frame: pd.DataFrame, column: str, digits: int) -> str:
            if column not in frame.columns:
                return ""
            early = frame.loc[frame["global_step"] <= CURVE_BIN, column].mean()
            late = frame.loc[frame["global_step"] > last_from, column].mean()
            return f"{fmt(early, digits)} → {fmt(late, digits)}"

        row["episode length (agent steps)"] = early_late(eps, "episode_length", 0)
        for column, label in DIAGNOSTICS.items():
            row[label] = early_late(updates, column, 4 if column == "approx_kl" else 3)
        rows.append(row)
    return ["## How each run trained: its first and last million agent steps", "",
            f"Means over the updates (and the episodes that ended) in the first {CURVE_BIN:,} agent steps → in the "
            f"last {CURVE_BIN:,}. Entropy in nats (Breakout's 4 actions: at most 1.386; Pong's and BeamRider's 6 and 9: "
            "1.792 and 2.197); approx. KL is the mean of (r − 1) − log r over a minibatch before its step; the clip "
            "fraction the share of samples with |r − 1| > ε (both ε and the step size anneal to 0).", "",
            markdown(pd.DataFrame(rows)), ""]


def where_section(manifests: pd.DataFrame) -> list[str]:
    """Where each run trained: its parts (a run resumed from checkpoints has several), each part's processor and
    numerics platform, commit and torch build, and the share of the run's steps each platform trained."""
    rows, hours, resumed, refilled = [], 0.0, [], []
    for m in manifests.sort_values(["game", "variant", "seed"]).itertuples():
        manifest = json.loads((Path(m.run_dir) / "manifest.json").read_text())  # the frame keeps scalars only
        parts = manifest.get("training_parts") or []
        if manifest.get("resumed_without_replay_buffer_at_steps"):
            refilled.append(f"{m.game} {m.variant_label} seed {m.seed} at agent step(s) "
                            + ", ".join(f"{s:,}" for s in manifest["resumed_without_replay_buffer_at_steps"]))
        resumed.append(resumed_elsewhere(parts))  # from the parts: runs written before it counted packages too
        starts = [int(p.get("from_step", 0)) for p in parts] + [int(m.total_steps)]
        share: dict[str, int] = {}
        for part, begin, end in zip(parts, starts, starts[1:]):
            key = f"{part.get('processor') or '?'} ({part.get('platform') or '?'}, torch "\
                  f"{(part.get('packages') or {}).get('torch', '?')})"
            share[key] = share.get(key, 0) + max(end - begin, 0)
        total = max(sum(share.values()), 1)
        commits = list(dict.fromkeys((p.get("commit") or "?")[:7] for p in parts))
        hours += float(m.wall_seconds) / 3600
        rows.append({"game": m.game, "algorithm": m.variant_label, "seed": m.seed, "parts": len(parts),
                     "steps by processor": "; ".join(f"{k} {v / total:.0%}" for k, v in share.items()),
                     "commits": ", ".join(commits), "job hours": f"{float(m.wall_seconds) / 3600:.1f}"})
    moved = sum(bool(m) for m in resumed)
    return ["## Where each run trained", "",
            f"{hours:.1f} job-hours in all: the wall clock of each single-threaded job, summed over its parts. The "
            "jobs ran at nice 19 beside other work, so their CPU time was less (docs/paper-scale.md gives the CPU "
            f"time measured per session). {moved} run(s) resumed on another numerics platform (processor or package "
            "versions, `ppo.training.driver.resumed_elsewhere`) than they started on; "
            "their later steps are another draw of the same training, not a bit-for-bit continuation "
            "(docs/reproducibility.md)."
            + (f" {len(refilled)} run(s) resumed on another machine from a checkpoint carried without its replay "
               f"buffer, and refilled it from empty ({'; '.join(refilled)}; ppo.pipeline.carry.without_replay_buffer)."
               if refilled else ""), "", markdown(pd.DataFrame(rows)), ""]


def checks_section(published: Path, scores: pd.DataFrame | None) -> list[str]:
    """The checks studies' runs (CHECKS) beside the atari study's runs of the same game, seed and preset (the check
    changes settings of that variant: atari_ppo_nature_cnn is atari_ppo on the Nature CNN): each seed's last-100
    score under both, and the mean of each over the seeds it has; for a check at another library's settings
    (SETTINGS_REFERENCE), that library's published score beside the mean."""
    lines = ["## Checks: where the Atari half disagrees with the paper", ""]
    references = load_atari_references(REFERENCES / "atari_reference_scores.csv")
    base_of_preset = {v.preset.name: v.name for v in load_study("atari", SCALE).variants}
    for name in CHECKS:
        study = load_study(name, SCALE)
        lines += [f"### {name} ({study.path.relative_to(ROOT)})", "",
                  " ".join(yaml.safe_load(study.path.read_text())["description"].split()), ""]
        runs_dir = published / name / SCALE / "runs"
        if not runs_dir.is_dir() or not any(runs_dir.rglob("manifest.json")):
            lines += [f"No run of this check is published yet (0 of {len(study.runs())}: "
                      "`GRID_NAME=atari-checks scripts/paper_grid.sh start` trains them).", ""]
            continue
        episodes, updates, manifests = load_runs(runs_dir, update_columns=("update", "global_step"))
        checked = run_scores(episodes, attach_env_protocol(check_runs(manifests)), updates)
        base_of = {v.name: base_of_preset.get(v.preset.name) for v in study.variants}  # None: no such variant
        rows = []
        for (game, variant, label), group in checked.groupby(["game", "variant", "variant_label"], sort=True):
            base = base_of.get(variant)
            paper = (scores[(scores["variant"] == base) & (scores["game"] == game)].set_index("seed")["score_last"]
                     if scores is not None and base is not None else pd.Series(dtype=float))
            ours = group.set_index("seed")["score_last"]
            for seed in sorted(set(ours.index) | set(paper.index)):
                rows.append({"game": game, "check": label, "seed": str(seed), "its last-100 score": fmt(ours.get(seed)),
                             "the atari study's run of its preset, same seed":
                             f"{fmt(paper.get(seed))} ({base})" if seed in paper.index else ""})
            rows.append({"game": game, "check": label, "seed": "mean of the seeds each has",
                         "its last-100 score": fmt(float(ours.mean())),
                         "the atari study's run of its preset, same seed":
                         f"{fmt(float(paper.mean()))} ({base})" if len(paper) else ""}
                        | settings_reference(references, variant, game))
        lines += [f"{len(checked)} of {len(study.runs())} runs of this check published; a run at fewer than "
                  f"{study.total_steps:,} agent steps is not in the dataset.", "", markdown(pd.DataFrame(rows)), ""]
    return lines


def settings_reference(references: pd.DataFrame, variant: str, game: str) -> dict:
    """The published score at the check's settings (SETTINGS_REFERENCE), with its source and what it measures."""
    if variant not in SETTINGS_REFERENCE:
        return {}
    rows = references[(references["algo"] == SETTINGS_REFERENCE[variant]) & (references["game"] == game)]
    if rows.empty:
        return {"published at its settings": "none for this game"}
    row = rows.iloc[0]
    clauses = [c.strip() for c in row["note"].split(";")]  # "env ...; what the score is; ..."
    return {"published at its settings": f"{fmt(float(row['score']))} ({row['algo']}: {clauses[1] if len(clauses) > 1 else row['note']})"}


def build(published: Path) -> str:
    """The page's markdown from the records under ``published``/atari/paper/runs."""
    head = ["# Atari at the paper's budget: the published runs", "",
            "<!-- written by scripts/atari_results.py from published/atari/paper; do not edit by hand -->", "",
            "PPO and A2C on Pong, Breakout and BeamRider at 10M agent steps (40M frames) per run, the paper2017 "
            "protocol and Table 5's settings (experiments/studies/atari.yaml, selection `three`; issue 33). "
            "`./repro atari-published` builds the full report (figures, aggregates) from the same records.", ""]
    planned = planned_runs()
    got = records(published)
    if got is None:
        return "\n".join(head + [f"No Atari run is published yet (0 of the {len(planned)} runs of "
                                 "`./repro atari-three`).", ""] + checks_section(published, None)).rstrip() + "\n"
    scores, manifests, episodes = got
    rows6, lines = table6_with_verdicts(scores)
    body = (progress_section(scores, planned) + table6_section(rows6, lines) + references_section(rows6, scores)
            + runs_section(scores) + curves_section(scores, episodes) + diagnostics_section(scores, manifests, episodes)
            + where_section(manifests) + checks_section(published, scores))
    return "\n".join(head + body).rstrip() + "\n"


def readme_table(published: Path) -> str:
    """README.md's summary of Table 6: per game, PPO's and A2C's mean of the seeds' last-100 scores with the 95% t
    interval, the paper's value and the short verdict (analysis.atari_tables.verdicts, up to its colon)."""
    planned = planned_runs()
    got = records(published)
    if got is None:
        return f"No Atari run at the paper's budget is published yet (0 of the {len(planned)} runs)."
    scores, _, _ = got
    lines = table6_with_verdicts(scores)[1].set_index(["game", "variant"])
    done = len(run_keys(scores) & run_keys(planned))
    label = {"atari_ppo": "PPO", "atari_a2c": "A2C"}
    rows = []
    for game in dict.fromkeys(planned["game"]):
        row = {"game": game}
        for variant, name in label.items():
            if (game, variant) not in lines.index:
                row |= {name: "none published", f"paper's {name}": "", f"{name} verdict": ""}
                continue
            v = lines.loc[(game, variant)]
            interval = f" ({fmt(v['our_ci_low'])} to {fmt(v['our_ci_high'])})" if math.isfinite(v["our_ci_low"]) else ""
            n = int(v["n_seeds"])
            row |= {name: f"{fmt(v['our_mean'])}{interval}, {n} seed{'' if n == 1 else 's'}",
                    f"paper's {name}": fmt(v["paper_mean"]), f"{name} verdict": v["verdict"].split(":")[0]}
        rows.append(row)
    return (f"{done} of the {len(planned)} runs are published; mean of the seeds' last-100 scores, 95% t interval over "
            "seeds:\n\n" + markdown(pd.DataFrame(rows)))


def write_readme(published: Path, readme: Path = README) -> None:
    """Replace the lines between README_BEGIN and README_END in ``readme`` with :func:`readme_table`."""
    replace_between(readme, README_BEGIN, README_END, readme_table(published) + "\n")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--published", type=Path, default=ROOT / "published")
    p.add_argument("--out", type=Path, default=PAGE)
    p.add_argument("--readme", action="store_true", help=f"also write README.md's Atari table ({README_BEGIN})")
    args = p.parse_args(argv)
    args.out.write_text(build(args.published))
    print(f"wrote {args.out}")
    if args.readme:
        write_readme(args.published)
        print(f"wrote the Atari table of {README}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
