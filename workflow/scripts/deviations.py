#!/usr/bin/env python
"""Write the "deviations from the paper" table of a study from its presets' documented choices.

python workflow/scripts/deviations.py --study table1 --scale reduced --out results/table1/reduced/report/deviations.csv
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis.report_tables import write_table
from ppo.config.errors import ConfigError
from ppo.config.files import EXPERIMENTS_DIR, read_yaml
from ppo.envs.atari import is_atari
from ppo.envs.gym import task_suite
from ppo.pipeline.study import load_study


def shown(value) -> str:
    """The value as written: 0.0007 stays 0.0007 (a float column would print it as 0.00)."""
    return value if isinstance(value, str) else str(value)


def rlhf_deviations(study) -> pd.DataFrame:
    """An RLHF study (ppo/pipeline/rlhf_study.py): the paper has no language-model experiment, so every setting is a
    choice it leaves open; each row names where the value comes from (the preset's choices), then the scale's
    overrides and the budget."""
    from ppo.rlhf.config import load_preset

    rows = []
    for preset in sorted(study.tasks):
        config, choices = load_preset(preset)
        for setting, choice in choices.items():
            rows.append({"preset": preset, "setting": setting, "value": shown(config.get(setting)),
                         "paper_states_it": False, "source_of_choice": choice["source"]})
    for setting, value in study.overrides:
        rows.append({"preset": "(study)", "setting": f"scales.{study.scale}.overrides.{setting}", "value": value,
                     "paper_states_it": False, "source_of_choice": study.label})
    rows.append({"preset": "(study)", "setting": "budget",
                 "value": f"{len(study.variants)} settings x {study.seeds} seeds, {study.updates} updates per run",
                 "paper_states_it": False, "source_of_choice": study.label})
    return pd.DataFrame(rows)


def deviations(study) -> pd.DataFrame:
    if study.kind == "rlhf":
        return rlhf_deviations(study)
    rows = []
    for preset in {v.preset.name: v.preset for v in study.variants}.values():
        for setting, choice in preset.choices.items():
            value = preset.config
            for key in setting.split("."):  # "trpo.max_kl": a field of the algorithm's section
                value = value.get(key) if isinstance(value, dict) else None
            rows.append({"preset": preset.name, "setting": setting, "value": shown(value),
                         "paper_states_it": bool(choice["paper_states"]), "source_of_choice": choice["source"]})
    for name in sorted({v.config.env_protocol for v in study.variants if v.config.env_protocol is not None}):
        path = EXPERIMENTS_DIR / "protocols" / f"{name}.yaml"
        protocol = read_yaml(path)  # already validated by load_study, via the variants' configs
        for setting, value in protocol["settings"].items():
            rows.append({"preset": f"(protocol {name})", "setting": setting, "value": shown(value),
                         "paper_states_it": False, "source_of_choice": protocol["sources"][setting]})
    for named, used in study.presets:
        rows.append({"preset": "(study)", "setting": "presets", "value": f"{named} -> {used}", "paper_states_it": False,
                     "source_of_choice": f"the variants name preset {named}; study {study.name} applies their "
                                         f"overrides to {used} instead (its field presets)"})
    atari = any(is_atari(t) for t in study.tasks)
    classic = not atari and not all(task_suite(t) == "MuJoCo" for t in study.tasks)
    rows.append({"preset": "(study)", "setting": "tasks", "value": ", ".join(study.tasks), "paper_states_it": False,
                 "source_of_choice": "paper: gym's 2017 Atari ids, whose names fixed some protocol settings; here "
                                     "ale-py's ALE/<Game>-v5 with every setting from the protocol" if atari else
                                     "the paper has no experiments on gymnasium's classic-control and Box2D tasks"
                                     if classic else "paper: the -v1 tasks of gym 0.9, no longer available"})
    rows.append({"preset": "(study)", "setting": "budget", "value": f"{study.total_steps} steps x {study.seeds} seeds",
                 "paper_states_it": not study.reduced, "source_of_choice": study.label})
    df = pd.DataFrame(rows)
    return df.sort_values(["paper_states_it", "preset", "setting"], kind="stable").reset_index(drop=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--study", required=True)
    p.add_argument("--scale", required=True)
    p.add_argument("--seeds", type=int, default=None)
    p.add_argument("--out", required=True, type=Path)
    args = p.parse_args(argv)
    try:
        study = load_study(args.study, args.scale, args.seeds)
    except ConfigError as err:  # one line naming the file and field, never a traceback
        print(f"deviations: error: {' '.join(str(err).split())}", file=sys.stderr)
        return 1
    write_table(deviations(study), args.out, args.out.with_suffix(".md"),
                notes=["Rows with paper_states_it = False are choices the paper leaves open; each names its source."],
                title="Deviations from the paper and unstated details")
    return 0


if __name__ == "__main__":
    sys.exit(main())
