#!/usr/bin/env python
"""The RLHF study's full-scale results as a page, docs/rlhf-results.md, written from the published records
(published/rlhf/full/runs, ppo.pipeline.publish) with the report's own analysis (analysis/rlhf.py), never typed by hand:

    python scripts/rlhf_results.py                                   # published/rlhf/full -> docs/rlhf-results.md
    python scripts/rlhf_results.py --published DIR --scale smoke --seeds 2 --out FILE    # another scale's records

A page of its own, linked from docs/rlhf.md, rather than sections of that page rewritten in place: docs/rlhf.md is
prose and measured commands edited by hand; a generator that rewrote parts of it would overwrite or be overwritten by
those edits, and whether its numbers are the records' could only be checked section by section. This page is all
generated, so tests/pipeline/test_rlhf_published.py regenerates it from published/ and compares the whole file.
``scripts/paper_grid.sh publish`` (and ``watch``) with GRID_NAME=rlhf regenerates and commits it after each publish.

What it shows: how many of the scale's runs are published (a partial grid says so on every table: the seeds each
setting has); peak and final gold per setting with 95% Student-t intervals over pipeline seeds and each seed's value
(analysis.rlhf.peak_final_table); one hacked response beside a healthy one, from samples.parquet, by a stated rule;
the frontier verdicts at the number of seeds run (analysis.rlhf.frontier_table); the reward models' held-out accuracy
(analysis.rlhf.reward_model_table); the runs' commits, processors and packages. With no records it says so and
reports nothing.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from analysis.rlhf import (FINAL, SMOOTH, frontier_table, load_runs, peak_final_table,  # noqa: E402
                           reward_model_table, sample_table)
from ppo.pipeline.study import load_study  # noqa: E402

STUDY, SCALE = "rlhf", "full"
PAGE = ROOT / "docs" / "rlhf-results.md"
METHODS = {"ppo": "PPO", "grpo": "GRPO", "rloo": "RLOO", "remax": "ReMax", "best_of_n": "best-of-n"}
# The hacked/healthy pair comes from this setting's samples when it has records (PPO's default surrogate with no
# reference-KL penalty: where the proxy is optimised furthest), else from the first β = 0 setting that has.
PAIR_SETTING = "clip_0.2-ref0"
PAIR_RULE = (
    "The responses the report shows for the setting (its lowest seed: the first two sampled responses of the batch "
    "where the proxy peaks, where gold peaks and at the end; analysis.rlhf.sample_table). Healthy: the one with the "
    "highest gold reward. Hacked: of those the proxy scores at least as high as the healthy one, the one with the "
    "lowest gold (none: no response of this setting is shown as hacked).")


def fmt(x, digits: int = 2) -> str:
    return "" if x is None or (isinstance(x, float) and not math.isfinite(x)) else f"{x:,.{digits}f}"


def interval(point, low, high) -> str:
    """'mean (low to high)', or the mean alone where there is no interval (one seed)."""
    if not math.isfinite(point):
        return ""
    return fmt(point) + (f" ({fmt(low)} to {fmt(high)})" if math.isfinite(low) and math.isfinite(high) else "")


def markdown(frame: pd.DataFrame) -> str:
    lines = ["| " + " | ".join(frame.columns) + " |", "|" + "|".join("---" for _ in frame.columns) + "|"]
    lines += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |" for row in frame.itertuples(index=False)]
    return "\n".join(lines)


def method(algorithm: str, cell: str) -> str:
    name = METHODS.get(algorithm, algorithm)
    if algorithm == "ppo":
        surrogate = cell.split("-ref")[0]
        return f"PPO ({surrogate})" if not surrogate.startswith(("rm_", "ref_")) else f"PPO (clip_0.2, {surrogate})"
    return name


def records_of(runs: Path) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    if not runs.is_dir() or not any(runs.rglob("manifest.json")):
        return None
    return load_runs(runs)


def provenance(manifests: pd.DataFrame) -> list[str]:
    """Commits, processors and packages of the runs, from their manifests."""
    info = []
    for run_dir in manifests["run_dir"]:
        m = json.loads((Path(run_dir) / "manifest.json").read_text())
        host, packages, git = m.get("host") or {}, m.get("packages") or {}, m.get("git") or {}
        info.append({"commit": str(git.get("commit") or "?")[:10], "cpu": host.get("cpu") or "?",
                     "torch": packages.get("torch") or "?", "python": host.get("python") or "?",
                     "wall": float(m.get("wall_seconds") or 0.0)})
    info = pd.DataFrame(info)

    def counted(column):
        return ", ".join(f"{k} ({v} runs)" for k, v in info[column].value_counts().sort_index().items())

    return [f"- commits: {counted('commit')}", f"- processors: {counted('cpu')}",
            f"- torch {counted('torch')}; Python {counted('python')}",
            f"- training time: {info['wall'].sum() / 3600:.2f} core-hours of runs (each run's own process, one "
            "thread; the starting models' builds not included)"]


def peak_section(records, manifests, seeds: int) -> list[str]:
    table = peak_final_table(records, manifests)
    done = table["n_runs"] - table["n_diverged"]
    shown = pd.DataFrame({
        "setting": table["setting"], "method": [method(a, c) for a, c in zip(table["algorithm"], table["cell"])],
        "seeds": [f"{d} of {seeds}" + (f", {x} diverged" if x else "") for d, x in zip(done, table["n_diverged"])],
        "gold at start": table["gold_start"].map(fmt),
        "peak gold (95% t)": [interval(*v) for v in table[["peak_gold", "peak_ci_low", "peak_ci_high"]].to_numpy()],
        "peak, per seed": table["peak_per_seed"],
        "final gold (95% t)": [interval(*v) for v in table[["final_gold", "final_ci_low", "final_ci_high"]].to_numpy()],
        "final, per seed": table["final_per_seed"],
        "√KL at the end": table["final_sqrt_kl"].map(fmt),
        "held-out gold at the end (95% t)": [interval(*v) for v in table[
            ["heldout_final_gold", "heldout_final_ci_low", "heldout_final_ci_high"]].to_numpy()]})
    return ["## Peak and final gold per setting", "",
            f"Gold reward of the sampled batch: peak = the largest value of its centred {SMOOTH}-update rolling mean, "
            f"final = the mean of the last {FINAL} updates (best-of-n: the best n, and the largest n); the mean over the "
            "completed pipeline seeds with its 95% Student-t interval (n − 1 degrees of freedom; none at one seed), and "
            "each seed's value in seed order. √KL = √KL(π‖π_ref) per response at the end. Held-out gold: the last "
            "evaluation on each run's fixed 256 held-out prompts (analysis.rlhf.PEAK_NOTE).", "", markdown(shown), ""]


def pair_section(records, manifests) -> list[str]:
    samples = sample_table(records, manifests)
    title = ["## A hacked response beside a healthy one", ""]
    if samples.empty:
        return title + ["No run has sampled responses yet.", ""]
    cells = [PAIR_SETTING] if PAIR_SETTING in set(samples["cell"]) else []
    cells = cells or [c for c, b in zip(manifests["cell"], manifests["reference_beta"]) if b == 0 and c in set(samples["cell"])]
    cell = cells[0] if cells else samples["cell"].iloc[0]
    shown = samples[samples["cell"] == cell]
    healthy = shown.loc[shown["gold_reward"].idxmax()]
    rivals = shown[(shown["proxy_reward"] >= healthy["proxy_reward"]) & (shown.index != healthy.name)]
    hacked = rivals.loc[rivals["gold_reward"].idxmin()] if not rivals.empty else None
    lines = title + [f"{PAIR_RULE} Setting: {healthy['setting']} (`{cell}`), seed {int(healthy['seed'])}.", ""]
    rows = [("healthy", healthy)] + ([("hacked", hacked)] if hacked is not None else [])
    table = pd.DataFrame([{"": name, "where": f"{r['point']} (update {fmt(r['sample_update'], 0)})",
                           "prompt → response": f"`{r['prompt']}` → `{r['response']}`",
                           "proxy reward": fmt(r["proxy_reward"]), "gold reward": fmt(r["gold_reward"]),
                           "ungrammatical transitions": fmt(r["violations"], 0),
                           "repeats beyond 2": fmt(r["repeats"], 0)} for name, r in rows])
    lines += [markdown(table), ""]
    if hacked is None:
        lines += ["No shown response of this setting has a proxy reward at least the healthy one's: none is shown as "
                  "hacked.", ""]
    else:
        lines += [f"The proxy scores the hacked response {fmt(hacked['proxy_reward'] - healthy['proxy_reward'])} above "
                  f"the healthy one; gold scores it {fmt(healthy['gold_reward'] - hacked['gold_reward'])} below. Text: "
                  "'^' starts the prompt, each word is a letter, '$' is EOS.", ""]
    return lines


def frontier_section(records, manifests) -> list[str]:
    table = frontier_table(records, manifests)
    title = ["## Does a reference-KL penalty move the gold-vs-KL frontier, or stop earlier on it?", ""]
    if table.empty:
        return title + ["No setting has runs at reference β = 0 and β > 0 yet.", ""]
    counts = table["verdict"].str.split(";").str[0].value_counts()
    pairs = sorted(table["n_pairs"].unique())
    lines = [f"For each surrogate, each β > 0 run's gold at matched KL against its own seed's β = 0 run (the rule: "
             f"analysis.rlhf.FRONTIER_RULE), over {', '.join(map(str, pairs))} pipeline seed(s) per row, 95% "
             f"Student-t interval. Verdicts over the {len(table)} rows: "
             + "; ".join(f"{v}: {n}" for v, n in counts.items()) + ".", ""]
    shown = pd.DataFrame({
        "setting": table["setting"], "ref β": table["reference_beta"].map(lambda b: f"{b:g}"),
        "seeds paired": table["n_pairs"],
        "gold at matched KL − β = 0 frontier (95% t)": [interval(*v) for v in table[
            ["matched_kl_gap", "gap_ci_low", "gap_ci_high"]].to_numpy()],
        "per seed": table["gap_per_seed"], "√KL at the end": table["stop_sqrt_kl"].map(fmt),
        "β = 0 peaks at √KL": table["ref0_peak_sqrt_kl"].map(fmt), "verdict": table["verdict"]})
    return title + lines + [markdown(shown), ""]


def reward_model_section(manifests) -> list[str]:
    table = reward_model_table(manifests)
    title = ["## The proxies: reward-model accuracy on held-out pairs", ""]
    if table.empty:
        return title + ["No run records its reward model's measures.", ""]
    shown = pd.DataFrame({
        "reward model": table["reward_model"], "models (seeds)": [f"{n} ({s})" for n, s in zip(table["n_models"], table["seeds"])],
        **{label: [interval(*v) for v in table[[c, f"{c}_ci_low", f"{c}_ci_high"]].to_numpy()]
           for label, c in (("accuracy, noisy labels (95% t)", "rm_accuracy_labels"),
                            ("accuracy, gold order (95% t)", "rm_accuracy_gold"),
                            ("correlation with gold on SFT samples", "rm_gold_correlation"))}})
    return title + ["Each distinct reward model the runs started from (one per pipeline seed and reward-model setting), "
                    "measured when it was built on max(256, pairs/4) fresh held-out pairs labelled like its training "
                    "pairs (analysis.rlhf.REWARD_MODEL_NOTE).", "", markdown(shown), ""]


def shown(path: Path) -> str:
    """``path`` as the page names it: relative to the project when inside it."""
    path = path.resolve()
    return str(path.relative_to(ROOT)) if ROOT in path.parents else str(path)


def build(published: Path, scale: str = SCALE, seeds: int | None = None) -> str:
    """The page's markdown from the records under ``published``/rlhf/``scale``/runs."""
    study = load_study(STUDY, scale, seeds)
    runs = published / STUDY / scale / "runs"
    command = "python scripts/rlhf_results.py" + ("" if (scale, seeds) == (SCALE, None) else
                                                   f" --scale {scale}" + (f" --seeds {seeds}" if seeds else ""))
    head = [f"# The RLHF study at scale `{scale}`: results from its published records", "",
            f"Generated by `{command}` from `{shown(runs)}` "
            "(every run's records, published by `python -m ppo.pipeline.publish --studies rlhf`); not edited by hand. "
            "The method, the settings and the peer comparison: [rlhf.md](rlhf.md).", ""]
    found = records_of(runs)
    if found is None:
        return "\n".join(head + [f"**No {scale}-scale RLHF records exist yet**: `{shown(runs)}` holds no run, so this page "
                                 "reports no result. The grid that trains them: `GRID_NAME=rlhf scripts/paper_grid.sh "
                                 "start`; `GRID_NAME=rlhf scripts/paper_grid.sh publish` publishes what finished and "
                                 "writes this page again.", ""])
    records, manifests = found
    planned = {r.run_id for r in study.runs()}
    published_ids = set(manifests["run_id"])
    cells = manifests.groupby("cell")["seed"].nunique()
    complete = int((cells >= study.seeds).sum())
    status = (f"**{len(published_ids & planned)} of the scale's {len(planned)} runs are published** "
              f"({len(manifests['cell'].unique())} of its {len(study.variants)} settings have at least one seed, "
              f"{complete} all {study.seeds}); "
              + ("every run of the grid is here." if planned <= published_ids else
                 "the grid is still training: settings with fewer seeds have wider intervals or none, and settings "
                 "without runs are absent.")
              + f" Seeds: {', '.join(map(str, sorted(manifests['seed'].unique())))}"
              + (", pipeline seeds (each seed its own grammar, SFT model and reward model)."
                 if manifests["pipeline_seeds"].all() else "."))
    extra = sorted(published_ids - planned)
    lines = head + [status, ""] + (
        [f"({len(extra)} published runs are not runs of this scale's plan and are left out: {extra[:3]})", ""] if extra else [])
    keep = manifests["run_id"].isin(planned)
    records, manifests = records[records["run_id"].isin(manifests.loc[keep, "run_id"])], manifests[keep]
    lines += peak_section(records, manifests, study.seeds)
    lines += pair_section(records, manifests)
    lines += frontier_section(records, manifests)
    lines += reward_model_section(manifests)
    lines += ["## Where the records come from", ""] + provenance(manifests) + [
        "", "Each run's commit, processor and packages: `published/INDEX.csv` (rows with study `rlhf`).", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--published", type=Path, default=ROOT / "published", help="the published dataset (holds rlhf/)")
    p.add_argument("--scale", default=SCALE, help="the RLHF study's scale (default: full)")
    p.add_argument("--seeds", type=int, default=None, help="the pipeline's seeds override of the scale's")
    p.add_argument("--out", type=Path, default=PAGE, help="the page (default: docs/rlhf-results.md)")
    args = p.parse_args(argv)
    text = build(args.published, args.scale, args.seeds)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    first = next((line for line in text.splitlines() if line.startswith("**")), "")
    print(f"wrote {args.out}: {first.strip('*').split('**')[0] if first else ''}".rstrip(": "))
    return 0


if __name__ == "__main__":
    sys.exit(main())
