"""Malformed inputs, in one place: each row of CASES breaks a fresh copy of the project in one way and
states the error it must produce.

Every case checks the same three things:
- the error is ONE line (no traceback, no multi-line dump);
- it matches the case's patterns, which name the file and the field (and the bad value where useful);
- every file under ``results/`` that existed before is still there, byte for byte. The only move allowed
  is an unreadable checkpoint set aside as ``<name>.corrupt``.

Each case says where the error surfaces (``where``):
- ``variant``, ``preset``, ``study``: the experiment loaders (ppo.config.experiments, ppo.pipeline.study). The Snakefile calls
  them when it is parsed, so these errors stop the pipeline before any job starts;
- ``snakemake``: the pipeline itself, in a subprocess (config/config.yaml schema, scale, read-only results);
- ``job``: ``python -m ppo.pipeline.job`` (a training job), called in-process with the plan the planner makes
  (ppo.pipeline.plan), edited as the case says (``args["plan"]``);
- ``report`` and ``random_scores``: the analysis scripts, called in-process on finished results;
- ``checkpoint``: ppo.training.driver.load_checkpoint.

A case may be marked xfail (strict) with the fix it needs; none is now.
"""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pytest
import torch
from project_copy import copy_project

import ppo.pipeline.job
from ppo.config.errors import ConfigError
from ppo.config.experiments import load_variant
from ppo.pipeline.plan import make_plan
from ppo.pipeline.study import load_study
from ppo.training.driver import load_checkpoint

ROOT = Path(__file__).resolve().parents[2]
VARIANT = "label: x\npreset: ppo_mujoco_paper\n"
SHORT = r"^.{1,500}$"  # the whole one-line message (source included): a long value is quoted short
RUNS = "results/table1/smoke/runs"
CHECKPOINT = "results/table1/smoke/checkpoints/Hopper-0123456789abcdef.pt"
# Root ignores permission bits; without these capabilities it does not (for the read-only results case).
NO_OVERRIDE = ["--bounding-set", "-dac_override,-dac_read_search,-fowner", "--"]


@dataclass(frozen=True)
class Case:
    name: str
    where: str  # variant | preset | study | snakemake | job | report | random_scores | checkpoint
    build: Callable[[Path], None]  # breaks the project copy at its root
    expect: tuple[str, ...]  # regular expressions the one-line error must match
    args: dict = field(default_factory=dict)  # scale/seeds (study), argv (snakemake), variant (variant), plan (job)
    xfail: str | None = None  # why it fails now, and the fix it needs in a file this suite may not edit


# ---- builders: each breaks one thing in the project copy -------------------------------------------------

def write(rel: str, text: str | bytes) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return build


def edit(rel: str, old: str, new: str) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        path = root / rel
        text = path.read_text()
        assert old in text, f"{rel} no longer contains {old!r}: update this case"
        path.write_text(text.replace(old, new, 1))
    return build


def variant(text: str) -> Callable[[Path], None]:
    return write("experiments/variants/broken.yaml", text)


def odd_variant_file(kind: str) -> Callable[[Path], None]:
    """experiments/variants/broken.yaml as a FIFO, a folder, or a 20 GB sparse file (issue 30)."""
    def build(root: Path) -> None:
        path = root / "experiments/variants/broken.yaml"
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "folder":
            path.mkdir()
        else:
            with open(path, "wb") as f:
                f.truncate(20 * 2**30)  # no disk used: never to be read whole
    return build


def study(old: str, new: str) -> Callable[[Path], None]:
    return edit("experiments/studies/table1.yaml", old, new)


def preset(old: str, new: str) -> Callable[[Path], None]:
    return edit("experiments/presets/ppo_mujoco_paper.yaml", old, new)


def as_planned(root: Path) -> None:
    """The project unchanged: the case breaks the job's plan (its args["plan"] edits it)."""


def chain(*builds: Callable[[Path], None]) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        for b in builds:
            b(root)
    return build


def episodes(n: int, steps: int = 4096) -> pd.DataFrame:
    return pd.DataFrame({"global_step": [(i + 1) * steps // n for i in range(n)],
                         "episode_return": [float(i % 17) for i in range(n)],
                         "episode_length": [10] * n, "wall_time": [0.01 * i for i in range(n)]})


def finished_results(root: Path) -> None:
    """Two finished runs of Hopper-v5, its random-policy score and an earlier report, as the pipeline
    leaves them."""
    for name, label, paper_row in (("clip_0.2", "Clipping, ε = 0.2", {"setting": "clipping", "param": "epsilon=0.2"}),
                                   ("no_clip", "No clipping or penalty", {"setting": "no_clipping_or_penalty", "param": ""})):
        run = root / RUNS / "Hopper-v5" / name / "seed0"
        run.mkdir(parents=True)
        episodes(300).to_parquet(run / "episodes.parquet", index=False)
        pd.DataFrame({"update": [1, 2], "global_step": [2048, 4096]}).to_parquet(run / "updates.parquet", index=False)
        (run / "manifest.json").write_text(json.dumps({
            "run_id": f"Hopper-v5/{name}/seed0", "task": "Hopper-v5", "env_version": "v5", "variant": name,
            "variant_label": label, "seed": 0, "status": "completed", "paper_row": paper_row, "total_steps": 4096}))
    random = root / "results/random/Hopper-v5.parquet"
    random.parent.mkdir(parents=True)
    episodes(100).to_parquet(random, index=False)
    report = root / "results/table1/smoke/report/table1.csv"
    report.parent.mkdir(parents=True)
    report.write_text("variant,ours\nclip_0.2,1.0\n")


def cut_in_half(rel: str) -> Callable[[Path], None]:
    def build(root: Path) -> None:
        path = root / rel
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    return build


def saved(obj) -> bytes:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return buffer.getvalue()


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """A few hundred bytes of YAML whose last alias expands to width**levels items."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def half_a_checkpoint() -> bytes:
    buffer = io.BytesIO()
    torch.save({"fingerprint": [("Hopper-v5/clip_0.2/seed0", "Hopper-v5", 0, "{}")], "params": torch.zeros(4096)},
               buffer)
    return buffer.getvalue()[: len(buffer.getvalue()) // 2]


# ---- the corpus ------------------------------------------------------------------------------------------

CASES = [
    # Variant files that are not regular files, or far too large (issue 30): named, never read whole.
    Case("a FIFO as a variant file", "variant", odd_variant_file("fifo"),
         (r"variants/broken\.yaml", "not a regular file")),
    Case("a folder as a variant file", "variant", odd_variant_file("folder"), (r"variants/broken\.yaml", "a folder")),
    Case("a 20 GB sparse variant file", "variant", odd_variant_file("sparse"),
         (r"variants/broken\.yaml", "21,474,836,480 bytes, more than the limit")),
    # Bad YAML.
    Case("bad YAML in a variant", "variant", variant("label: [unclosed\n"),
         (r"variants/broken\.yaml", "not valid YAML", "line 1")),
    Case("a job's plan whose run's config was edited after planning", "job", as_planned,
         (r"^error: .*plan\.json: field runs\[1\]\.config_digest is '[0-9a-f]{16}', but the run's config in the plan "
          r"digests to '[0-9a-f]{16}'", "plan again", "nothing was trained"),
         args={"plan": lambda plan: plan["runs"][1]["config"].update(horizon=1024)}),
    Case("a job's plan of another format", "job", as_planned, (r"^error: .*plan\.json: field format is 0", "plan again"),
         args={"plan": lambda plan: plan.update(format=0)}),
    Case("a job's plan whose run's config holds a bad value", "job", as_planned,
         (r"^error: .*plan\.json \(runs\[0\]\.config\): field gamma must", "got 'high'"),
         args={"plan": lambda plan: plan["runs"][0]["config"].update(gamma="high")}),
    Case("a job's plan whose run's folder is not its run's", "job", as_planned,
         (r"^error: .*plan\.json: field runs\[0\]\.folder is '.*/Hopper-v5/clip_0\.2/seed0', but run "
          r"Hopper-v5/no_clip/seed0 of study table1 at scale smoke keeps its records in '.*/Hopper-v5/no_clip/seed0'",),
         args={"plan": lambda plan: plan["runs"][0].update(folder=plan["runs"][1]["folder"])}),
    Case("duplicate key in a variant", "variant",
         variant(VARIANT + "overrides: {horizon: 1024}\noverrides: {horizon: 4096}\n"),
         (r"variants/broken\.yaml", "overrides", "more than once|duplicate")),
    # Unknown keys.
    Case("a look-alike label (a Cyrillic С in Clipping)", "variant",
         variant("label: \"\u0421lipping, \u03b5 = 0.2\"\npreset: ppo_mujoco_paper\n"),
         (r"variants/broken\.yaml", "field label", "mixes letters of CYRILLIC and LATIN")),
    Case("variant names that differ only by case", "study",
         chain(write("experiments/variants/Clip_0.2.yaml", VARIANT), study('"clip_*", ', '"clip_*", Clip_0.2, ')),
         (r"studies/table1\.yaml", "'clip_0.2' and 'Clip_0.2' differ only by case")),
    Case("unknown top-level key in a variant", "variant", variant(VARIANT + "overides: {}\n"),
         (r"variants/broken\.yaml", "overides")),
    Case("unknown hyperparameter", "variant", variant(VARIANT + "overrides: {learning_rat: 1}\n"),
         (r"variants/broken\.yaml", "learning_rat")),
    Case("unknown objective field", "variant", variant(VARIANT + "overrides: {ppo: {objective: {clip: 0.2}}}\n"),
         (r"variants/broken\.yaml", r"objective\.\['clip'\]")),
    Case("unknown key in the study", "study", study("anchor: clip_0.2", "anchor: clip_0.2\nextra_key: 1"),
         (r"studies/table1\.yaml", "extra_key")),
    Case("unknown key in a study scale", "study", study("    seeds: 1\n", "    seeds: 1\n    seed: 2\n"),
         (r"studies/table1\.yaml \(scales\.smoke\)", r"\['seed'\]")),
    Case("unknown hyperparameter in the preset", "preset", preset("  adam_eps: 1.0e-5", "  adam_epsilon: 1.0e-5"),
         (r"presets/ppo_mujoco_paper\.yaml", "adam_epsilon")),
    # Wrong types.
    Case("quoted number", "variant", variant(VARIANT + "overrides: {horizon: '2048'}\n"),
         (r"variants/broken\.yaml", "field horizon", "'2048'")),
    Case("string for a list", "variant", variant(VARIANT + "overrides: {hidden_sizes: '64'}\n"),
         (r"variants/broken\.yaml", "field hidden_sizes")),
    Case("zero-width layer", "variant", variant(VARIANT + "overrides: {hidden_sizes: [64, 0]}\n"),
         (r"variants/broken\.yaml", "field hidden_sizes", r"\[64, 0\]")),
    Case("string for a boolean", "variant", variant(VARIANT + "overrides: {obs_norm: 'yes'}\n"),
         (r"variants/broken\.yaml", "field obs_norm", "'yes'")),
    Case("boolean for a number", "variant", variant(VARIANT + "overrides: {ppo: {learning_rate: true}}\n"),
         (r"variants/broken\.yaml", "field ppo.learning_rate", "True")),
    Case("quoted objective number", "variant", variant(VARIANT + "overrides: {ppo: {objective: {kl_beta: '1'}}}\n"),
         (r"variants/broken\.yaml", r"objective\.kl_beta")),
    Case("overrides is a list", "variant", variant(VARIANT + "overrides: [1, 2]\n"),
         (r"variants/broken\.yaml", "overrides", "mapping")),
    Case("missing label", "variant", variant("preset: ppo_mujoco_paper\n"), (r"variants/broken\.yaml", "label")),
    Case("paper_row is a string", "variant", variant(VARIANT + "paper_row: clipping\n"),
         (r"variants/broken\.yaml", "field paper_row must be true or false", "'clipping'")),
    Case("study tasks is a string", "study",
         study("    tasks: [InvertedPendulum-v5, Hopper-v5]", "    tasks: Hopper-v5"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.tasks must be a non-empty list", "'Hopper-v5'")),
    Case("study scale is not a mapping", "study", study("  smoke:\n", "  smoke: 5\n  smoke_old:\n"),
         (r"studies/table1\.yaml", r"field scales\.smoke must be a non-empty mapping")),
    Case("study 'reduced' is a string", "study", study("    reduced: false", "    reduced: 'no'"),
         (r"studies/table1\.yaml", r"field scales\.paper\.reduced", "'no'"), args={"scale": "paper"}),
    # Out-of-range hyperparameters.
    Case("negative total_steps", "variant", variant(VARIANT + "overrides: {total_steps: -5}\n"),
         (r"variants/broken\.yaml", "total_steps", "-5")),
    Case("negative clip_epsilon", "variant", variant(VARIANT + "overrides: {ppo: {objective: {clip_epsilon: -0.1}}}\n"),
         (r"variants/broken\.yaml", r"objective\.clip_epsilon", "-0.1")),
    Case("fractional epochs", "variant", variant(VARIANT + "overrides: {ppo: {epochs: 2.5}}\n"),
         (r"variants/broken\.yaml", "epochs", "2.5")),
    Case("gamma above 1", "variant", variant(VARIANT + "overrides: {gamma: 1.5}\n"),
         (r"variants/broken\.yaml", "gamma")),
    Case("negative gae_lambda, with its value", "variant", variant(VARIANT + "overrides: {gae_lambda: -0.1}\n"),
         (r"variants/broken\.yaml", "gae_lambda", "-0.1")),
    Case("minibatch does not divide the batch", "variant", variant(VARIANT + "overrides: {ppo: {minibatch_size: 100}}\n"),
         (r"variants/broken\.yaml", "minibatch_size 100")),
    Case("KL target without a KL penalty", "variant", variant(VARIANT + "overrides: {ppo: {objective: {kl_target: 0.01}}}\n"),
         (r"variants/broken\.yaml", "kl_target", "kl_beta")),
    Case("infinite learning rate", "variant", variant(VARIANT + "overrides: {ppo: {learning_rate: .inf}}\n"),
         (r"variants/broken\.yaml", "learning_rate", "inf")),
    Case("negative Adam epsilon", "variant", variant(VARIANT + "overrides: {ppo: {adam_eps: -1.0e-5}}\n"),
         (r"variants/broken\.yaml", "adam_eps", "-1e-05")),
    Case("negative gradient-norm clip", "variant", variant(VARIANT + "overrides: {ppo: {max_grad_norm: -1}}\n"),
         (r"variants/broken\.yaml", "max_grad_norm", "-1")),
    Case("negative total_steps in a study scale", "study",
         study("total_steps: 1000000", "total_steps: -1000000"),
         (r"studies/table1\.yaml", r"field scales\.paper\.total_steps", "-1000000"), args={"scale": "paper"}),
    # Unknown tasks and protocols.
    Case("unknown time-limit protocol", "variant", variant(VARIANT + "overrides: {time_limit: foo}\n"),
         (r"variants/broken\.yaml", "time_limit", "'foo'")),
    Case("unknown env id", "study", study("tasks: [InvertedPendulum-v5, Hopper-v5]", "tasks: [InvertedPendulum-v5, Hoppper-v5]"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.tasks", "unknown task id 'Hoppper-v5'")),
    Case("env id without version", "study", study("Hopper-v5, InvertedDoublePendulum", "Hopper, InvertedDoublePendulum"),
         (r"studies/table1\.yaml", "field tasks", "'Hopper' has no version suffix"), args={"scale": "paper"}),
    # A study referring to what is not there.
    Case("study names a missing variant", "study",
         study('"kl_fixed_*"]', '"kl_fixed_*", "no_such_variant"]'),
         (r"studies/table1\.yaml", "field variants", "'no_such_variant' matches no file")),
    Case("anchor is not a variant of the study", "study", study("anchor: clip_0.2", "anchor: clip_9"),
         (r"studies/table1\.yaml", "field anchor 'clip_9'")),
    Case("variant with an unknown preset", "variant", variant("label: x\npreset: no_such_preset\n"),
         (r"presets/no_such_preset\.yaml",)),
    Case("variant with an unknown preset names the variant and field", "variant",
         variant("label: x\npreset: no_such_preset\n"),
         (r"variants/broken\.yaml", "field preset", "no_such_preset")),
    # Duplicates.
    Case("study lists a variant twice", "study",
         study('variants: [no_clip, "clip_*"', 'variants: [no_clip, clip_0.2, clip_0.2, "clip_*"'),
         (r"studies/table1\.yaml", r"field variants lists \['clip_0\.2'\] more than once")),
    Case("two variants with one label", "study",
         write("experiments/variants/clip_0.2b.yaml", 'label: "Clipping, ε = 0.2"\npreset: ppo_mujoco_paper\n'),
         (r"variants/clip_0\.2b\.yaml", "field label 'Clipping, ε = 0.2'", r"clip_0\.2\.yaml")),
    Case("study lists a task twice", "study",
         study("tasks: [HalfCheetah-v5", "tasks: [HalfCheetah-v5, HalfCheetah-v5"),
         (r"studies/table1\.yaml", r"field tasks lists \['HalfCheetah-v5'\] more than once"), args={"scale": "paper"}),
    # Empty lists and seed counts.
    Case("no seeds in a study scale", "study", study("    seeds: 1\n", "    seeds: 0\n"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.seeds", "got 0")),
    Case("empty seed list in a study scale", "study", study("    seeds: 1\n", "    seeds: []\n"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.seeds", r"got \[\]")),
    Case("seeds override of 0", "study", lambda root: None,
         (r"pipeline config .*studies/table1\.yaml scales\.smoke\.seeds", "field seeds", "got 0"), args={"seeds": 0}),
    Case("empty variant list", "study", study('variants: [no_clip, "clip_*", "kl_adaptive_*", "kl_fixed_*"]', "variants: []"),
         (r"studies/table1\.yaml", "field variants must be a non-empty list")),
    Case("empty task list in a scale", "study",
         study("    tasks: [InvertedPendulum-v5, Hopper-v5]", "    tasks: []"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.tasks must be a non-empty list")),
    # Presets.
    Case("preset without 'choices'", "preset", lambda root: _drop_choices(root),
         (r"presets/ppo_mujoco_paper\.yaml", r"missing field\(s\) \['choices'\]")),
    Case("preset choice without its source", "preset",
         preset('adam_eps: {paper_states: false, source: "ppo1 pposgd_simple.learn adam_epsilon=1e-5"}',
                "adam_eps: {paper_states: false}"),
         (r"presets/ppo_mujoco_paper\.yaml", r"choices\.ppo\.adam_eps", "source")),
    Case("preset 'choices' is a list", "preset", lambda root: _drop_choices(root, "choices: [total_steps]\n"),
         (r"presets/ppo_mujoco_paper\.yaml", "choices", "mapping")),
    # config/config.yaml, checked by Snakemake against workflow/schemas/config.schema.yaml (a dry run).
    Case("config: unknown key", "snakemake", edit("config/config.yaml", "tracking: none", "tracking: none\ntrakcing: wandb"),
         (r"config/config\.yaml", "'trakcing' was unexpected"), args={"argv": ["-n"]}),
    Case("config: negative group_size", "snakemake", lambda root: None,
         (r"config/config\.yaml", "field group_size", "-3 is less than the minimum of 0"),
         args={"argv": ["-n", "--config", "group_size=-3"]}),
    Case("config: a simulator speed so small its job time overflows", "snakemake", lambda root: None,
         (r"config/config\.yaml", "field sim_steps_per_second.CartPole-v1", "less than the minimum of 1"),
         args={"argv": ["-n", "--config", "sim_steps_per_second={CartPole-v1: 5.0e-324}"]}),
    Case("config: no seeds", "snakemake", edit("config/config.yaml", "seeds: null", "seeds: 0"),
         (r"config/config\.yaml", "field seeds", "0 is less than the minimum of 1"), args={"argv": ["-n"]}),
    Case("config: scale the study does not define", "snakemake", edit("config/config.yaml", "scale: reduced", "scale: huge"),
         (r"studies/classic\.yaml", "scale 'huge' \\(config scale\\) is not defined"), args={"argv": ["-n"]}),
    # A results folder that cannot be written: refused before training, nothing touched.
    Case("results folder is a file, training job", "job", write("results", "not a folder\n"),
         (r"^error: .*results/table1/smoke/runs/Hopper-v5/no_clip/seed0: cannot create it, .*results is a file",
          "nothing was trained")),
    Case("read-only results folder, pipeline", "snakemake", chain(finished_results, lambda root: _read_only(root / "results")),
         (r"cannot write results: results/table1/smoke/runs/\S+: cannot write in results/table1/smoke/runs "
          r"\(Permission denied\)", "no job was started"),
         args={"argv": ["--cores", "1", "--config", "studies=[table1]", "scale=smoke"], "unprivileged": True}),
    # Damaged records, after results exist: named in one line, left where they are.
    Case("run's episodes.parquet cut in half", "report",
         chain(finished_results, cut_in_half(f"{RUNS}/Hopper-v5/clip_0.2/seed0/episodes.parquet")),
         (r"^table1_report: error: corrupt parquet file \S+/Hopper-v5/clip_0\.2/seed0/episodes\.parquet",)),
    Case("run's manifest.json cut in half", "report",
         chain(finished_results, cut_in_half(f"{RUNS}/Hopper-v5/no_clip/seed0/manifest.json")),
         (r"^table1_report: error: corrupt manifest \S+/Hopper-v5/no_clip/seed0/manifest\.json",)),
    Case("random-policy parquet cut in half", "random_scores",
         chain(finished_results, cut_in_half("results/random/Hopper-v5.parquet")),
         (r"^random_scores: error: corrupt parquet file \S+/results/random/Hopper-v5\.parquet",)),
    # Corrupt checkpoints: moved aside to .corrupt (never deleted), the group starts over.
    Case("checkpoint cut in half", "checkpoint", write(CHECKPOINT, half_a_checkpoint()),
         (rf"checkpoint \S+{re.escape(CHECKPOINT)} is unreadable", r"moved to \S+\.pt\.corrupt")),
    Case("checkpoint that is not a torch file", "checkpoint", write(CHECKPOINT, b"not a checkpoint\n" * 8),
         (rf"checkpoint \S+{re.escape(CHECKPOINT)} is unreadable", r"moved to \S+\.pt\.corrupt")),
    Case("second corrupt checkpoint keeps the first", "checkpoint",
         chain(write(CHECKPOINT + ".corrupt", b"the first corrupt checkpoint"), write(CHECKPOINT, half_a_checkpoint())),
         (rf"checkpoint \S+{re.escape(CHECKPOINT)} is unreadable",)),
    # ---- hostile and careless input (issue 17) ----
    # Names that become paths and shell words: refused while planning, so no shell ever sees them.
    Case("variant file name that runs a command", "study",
         write("experiments/variants/clip_$(touch PWNED).yaml", 'label: "pwned"\npreset: ppo_mujoco_paper\n'),
         (r"variants/clip_\$\(touch PWNED\)\.yaml", "variant name", "not a valid name")),
    Case("variant file name that runs a command, pipeline run", "snakemake",
         write("experiments/variants/clip_$(touch PWNED).yaml", 'label: "pwned"\npreset: ppo_mujoco_paper\n'),
         (r"variants/clip_\$\(touch PWNED\)\.yaml", "variant name", "not a valid name"),
         args={"argv": ["--cores", "1", "--config", "studies=[table1]", "scale=smoke"]}),
    Case("variant file name with a space", "study",
         write("experiments/variants/clip_0.2 copy.yaml", 'label: "copy"\npreset: ppo_mujoco_paper\n'),
         (r"variants/clip_0\.2 copy\.yaml", "variant name 'clip_0.2 copy' is not a valid name")),
    Case("study name that leaves experiments/", "study", lambda root: None,
         ("pipeline config \\(studies\\)", r"study name '\.\./\.\./elsewhere/x' is not a valid name"),
         args={"study": "../../elsewhere/x"}),
    Case("study name that leaves experiments/, pipeline", "snakemake", lambda root: None,
         ("field studies.0", r"'\.\./\.\./elsewhere/x'"), args={"argv": ["-n", "--config", "studies=[../../elsewhere/x]"]}),
    Case("scale name that leaves results/", "study", lambda root: None,
         ("pipeline config \\(scale\\)", r"scale '\.\./x' is not a valid name"), args={"scale": "../x"}),
    Case("Atari protocol name that is a path", "variant",
         variant("label: x\npreset: ppo_atari_paper\noverrides: {env_protocol: ../../../etc/passwd}\n"),
         (r"variants/broken\.yaml", "field env_protocol", "not a valid name")),
    # What a job writes at its end is checked while planning: nothing trains to fail on it.
    Case("paper_row holding an alias cycle", "variant",
         variant(VARIANT + "paper_row: &row {setting: *row, param: ''}\n"),
         (r"variants/broken\.yaml", "not valid YAML at line 3", "aliases")),
    Case("paper_row written as the row it was before it was derived", "variant",
         variant(VARIANT + "paper_row: {setting: clipping, param: 'epsilon=0.2'}\n"),
         (r"variants/broken\.yaml", r"field paper_row must be true or false", "setting")),
    Case("paper_row holding a date", "variant", variant(VARIANT + "paper_row: 2017-07-20\n"),
         (r"variants/broken\.yaml", r"field paper_row must be true or false", "datetime")),
    # A paper_row is a claim that the paper's number belongs beside ours: it must be what the overrides make.
    Case("a copied variant keeps the paper_row of the one it was copied from", "variant",
         variant("label: Clipping, ε = 0.4\npreset: ppo_mujoco_paper\noverrides: {ppo: {objective: {clip_epsilon: 0.4}}}\n"
                 "paper_row: true\n"),
         (r"variants/broken\.yaml", r"field paper_row: the variant's objective is \{setting: clipping, "
          r"param: 'epsilon=0\.4'\}", "not a row of Table 1")),
    Case("a paper_row beside an override of another setting", "variant",
         variant("label: x\npreset: ppo_mujoco_paper\noverrides: {ppo: {objective: {clip_epsilon: 0.2}, epochs: 20}}\n"
                 "paper_row: true\n"),
         (r"variants/broken\.yaml", r"field overrides\.ppo\.epochs", "only ppo.objective")),
    Case("two variants of a study claim one row of Table 1", "study",
         write("experiments/variants/clip_0.20.yaml", "label: Clipping again\npreset: ppo_mujoco_paper\n"
               "overrides: {ppo: {objective: {clip_epsilon: 0.2}}}\npaper_row: true\n"),
         (r"variants/clip_0\.20?\.yaml", r"field paper_row \{setting: clipping, param: 'epsilon=0\.2'\} is already",
          r"clip_0\.20?\.yaml")),
    Case("a task the driver cannot train", "study",
         study("tasks: [InvertedPendulum-v5, Hopper-v5]", "tasks: [FrozenLake-v1, Hopper-v5]"),
         (r"studies/table1\.yaml", r"field scales\.smoke\.tasks", "'FrozenLake-v1' is not a task this project trains")),
    Case("a study selection naming a game the study does not train", "study",
         edit("experiments/studies/atari.yaml", "tasks: [ALE/Pong-v5, ALE/Breakout-v5, ALE/BeamRider-v5]",
              "tasks: [ALE/Pong-v5, ALE/Breakout-v5, ALE/BeamRidr-v5]"),
         (r"studies/atari\.yaml", r"field selections\.three\.tasks: 'ALE/BeamRidr-v5' is not one of the study's tasks"),
         args={"study": "atari"}),
    Case("a study selection with a field it does not have", "study",
         edit("experiments/studies/atari.yaml", "variants: [atari_ppo, atari_a2c]\n", "variant: [atari_ppo]\n"),
         (r"studies/atari\.yaml", r"unknown field\(s\) \[.selections\.three\.variant.\]"),
         args={"study": "atari"}),
    Case("a task the driver cannot train, in a job's plan", "job", as_planned,
         (r"^error: .*plan\.json: field runs\[0\]\.task", "'Taxi-v4' is not a task this project trains"),
         args={"plan": lambda plan: plan["runs"][0].update(task="Taxi-v4")}),
    Case("a discrete-action task for an algorithm without a categorical policy", "study",
         edit("experiments/studies/figure3.yaml", "tasks: [InvertedPendulum-v5, Hopper-v5]",
              "tasks: [CartPole-v1, Hopper-v5]"),
         (r"studies/figure3\.yaml", r"field scales\.smoke\.tasks", "'CartPole-v1' has discrete actions",
          "algorithm a2c"), args={"study": "figure3"}),
    Case("a study preset that does not exist", "study",
         edit("experiments/studies/classic.yaml", "presets: {ppo_mujoco_paper: ppo_classic}",
              "presets: {ppo_mujoco_paper: ppo_clasic}"),
         (r"studies/classic\.yaml", "field presets", "no preset 'ppo_clasic'"), args={"study": "classic"}),
    Case("a study preset that no variant names", "study",
         edit("experiments/studies/classic.yaml", "presets: {ppo_mujoco_paper: ppo_classic}",
              "presets: {ppo_mujoco_paper: ppo_classic, a2c_mujoco: ppo_classic}"),
         (r"studies/classic\.yaml", "field presets", "no variant of the study names preset 'a2c_mujoco'"),
         args={"study": "classic"}),
    Case("a study preset mapped to itself", "study",
         edit("experiments/studies/classic.yaml", "presets: {ppo_mujoco_paper: ppo_classic}",
              "presets: {ppo_mujoco_paper: ppo_mujoco_paper}"),
         (r"studies/classic\.yaml", "field presets maps preset 'ppo_mujoco_paper' to itself"),
         args={"study": "classic"}),
    Case("study presets given as a list", "study",
         edit("experiments/studies/classic.yaml", "presets: {ppo_mujoco_paper: ppo_classic}", "presets: [ppo_classic]"),
         (r"studies/classic\.yaml", "field presets must be a mapping"), args={"study": "classic"}),
    Case("checkpoint that is a list", "checkpoint", write(CHECKPOINT, saved([1, 2, 3])),
         (rf"checkpoint \S+{re.escape(CHECKPOINT)} is unreadable", "not a group's saved state", r"moved to \S+\.pt\.corrupt")),
    Case("checkpoint with a wrong fingerprint field", "checkpoint",
         write(CHECKPOINT, saved({k: 0 for k in ("fingerprint", "iteration", "algorithm", "sample_rng", "envs", "log",
                                                 "update_rows", "timing_rows", "alive", "diverged")})),
         (rf"checkpoint \S+{re.escape(CHECKPOINT)} is unreadable", "fingerprint", r"moved to \S+\.pt\.corrupt")),
    # Memory: nothing is expanded, sizes are bounded with the limit named.
    Case("alias bomb in a typed field", "variant", variant(alias_bomb() + VARIANT + "overrides: {hidden_sizes: *a8}\n"),
         (r"variants/broken\.yaml", "not valid YAML at line 2", "aliases")),
    Case("alias bomb in a label", "variant", variant(alias_bomb() + "label: *a8\npreset: ppo_mujoco_paper\n"),
         (r"variants/broken\.yaml", "aliases")),
    Case("a billion seeds", "study", lambda root: None,
         (r"pipeline config", "field seeds is 1000000000, more than the limit of 1,000"), args={"seeds": 10**9}),
    Case("a billion seeds on the command line", "snakemake", lambda root: None,
         ("field seeds", "1000000000 is greater than the maximum of 1000"),
         args={"argv": ["-n", "--config", "seeds=1000000000"]}),
    Case("a 2 MB variant file", "variant", variant(VARIANT + "# " + "x" * 2_000_000 + "\n"),
         (r"variants/broken\.yaml", "more than the limit of 1,000,000")),
    Case("an integer of 5000 digits", "variant", variant(VARIANT + "overrides: {horizon: " + "9" * 5000 + "}\n"),
         (r"variants/broken\.yaml", "not valid YAML", "ValueError")),
    Case("horizon of 1e12", "variant", variant(VARIANT + "overrides: {horizon: 1.0e+12}\n"),
         (r"variants/broken\.yaml", "field horizon must lie in", "100,?000|1e\\+05")),
    Case("hidden layer of 1e12 units", "variant", variant(VARIANT + "overrides: {hidden_sizes: [64, 1000000000000]}\n"),
         (r"variants/broken\.yaml", "field hidden_sizes", "4096")),
    # A value is quoted short whatever its size (SHORT), and an integer too large for a float is refused in
    # one line (it raised OverflowError, or was accepted).
    Case("a 5000-character choice", "variant", variant(VARIANT + "overrides: {ppo: {lr_schedule: " + "x" * 5000 + "}}\n"),
         (r"variants/broken\.yaml", r"field ppo\.lr_schedule must be one of \('constant', 'linear'\)", r"'x+\.\.\.x+'",
          SHORT)),
    Case("a 5000-character algorithm", "variant", variant(VARIANT + "overrides: {algorithm: " + "x" * 5000 + "}\n"),
         (r"variants/broken\.yaml", "field algorithm must be one of", SHORT)),
    Case("a 5000-character lr_decay_steps", "variant",
         variant("label: x\npreset: a2c_mujoco\noverrides: {a2c: {lr_decay_steps: " + "x" * 5000 + "}}\n"),
         (r"variants/broken\.yaml", r"field a2c\.lr_decay_steps must be an integer or null", SHORT)),
    Case("a 5000-character protocol in a rule joining fields", "variant",
         variant(VARIANT + "overrides: {env_protocol: " + "x" * 5000 + "}\n"),
         (r"variants/broken\.yaml", "env_protocol is required with a convolutional network", SHORT)),
    Case("an integer of 401 digits for a number", "variant",
         variant(VARIANT + "overrides: {ppo: {objective: {kl_beta: 1" + "0" * 400 + "}}}\n"),
         (r"variants/broken\.yaml", r"field ppo\.objective\.kl_beta must be a finite number", SHORT)),
    Case("an integer of 401 digits for a baseline's number", "variant",
         variant("label: x\npreset: a2c_mujoco\noverrides: {a2c: {learning_rate: 1" + "0" * 400 + "}}\n"),
         (r"variants/broken\.yaml", r"field a2c\.learning_rate must be a finite number", SHORT)),
    Case("an integer of 401 digits for an integer", "variant",
         variant("label: x\npreset: acer_atari\noverrides: {acer: {lr_decay_steps: 1" + "0" * 400 + "}}\n"),
         (r"variants/broken\.yaml", r"field acer\.lr_decay_steps must lie in \[1, 1e\+10\]", SHORT)),
    # A variant's machine-readable claim (read by the details report only).
    Case("claim that is a string", "variant", variant(VARIANT + "claim: it helps\n"),
         (r"variants/broken\.yaml", "field claim must be a mapping")),
    Case("claim with an unknown direction", "variant", variant(VARIANT + "claim: {direction: up}\n"),
         (r"variants/broken\.yaml", r"field claim\.direction must be one of", "'up'")),
    Case("claim with an unknown field", "variant", variant(VARIANT + "claim: {direction: worse, tasks: [], why: x}\n"),
         (r"variants/broken\.yaml", r"claim\.why")),
    Case("claim of little change without its margin", "variant", variant(VARIANT + "claim: {direction: none}\n"),
         (r"variants/broken\.yaml", r"field claim\.margin is needed")),
    Case("claim margin above 1", "variant", variant(VARIANT + "claim: {direction: none, margin: 2}\n"),
         (r"variants/broken\.yaml", r"field claim\.margin must be a number in \(0, 1\]", "got 2")),
    Case("claim task with its version", "variant", variant(VARIANT + "claim: {direction: better, tasks: [Hopper-v5]}\n"),
         (r"variants/broken\.yaml", r"field claim\.tasks must be a list of task names without version")),
    Case("claim mechanism on an unknown statistic", "variant",
         variant(VARIANT + "claim: {direction: worse, mechanism: {stat: kl_div, op: '>', value: 0.05}}\n"),
         (r"variants/broken\.yaml", r"field claim\.mechanism\.stat must be one of", "'kl_div'")),
    Case("claim mechanism with a bad comparison", "variant",
         variant(VARIANT + "claim: {direction: worse, mechanism: {stat: kl, op: '>=', value: 0.05}}\n"),
         (r"variants/broken\.yaml", r"field claim\.mechanism\.op")),
    Case("claim mechanism compared with a word", "variant",
         variant(VARIANT + "claim: {direction: worse, mechanism: {stat: kl, op: '>', value: baseline}}\n"),
         (r"variants/broken\.yaml", r"field claim\.mechanism\.value must be a finite number or 'anchor'")),
    Case("claim on early stopping without a KL target", "variant",
         variant(VARIANT + "claim: {direction: none, margin: 0.1, mechanism: {stat: early_stop_fraction, op: '<', "
                 "value: 0.25}}\n"),
         (r"variants/broken\.yaml", r"claim\.mechanism\.stat early_stop_fraction needs ppo\.target_kl")),
    Case("claim about a task the study never trains", "study",
         write("experiments/variants/clip_0.4.yaml", "label: x\npreset: ppo_mujoco_paper\n"
               "claim: {direction: worse, tasks: [Halfcheetah]}\n"),
         (r"variants/clip_0\.4\.yaml", r"field claim\.tasks: 'Halfcheetah' is not a task of study table1")),
    Case("cg_iters of 1e12", "variant", variant("label: x\npreset: trpo_mujoco\noverrides: {trpo: {cg_iters: 1000000000000}}\n"),
         (r"variants/broken\.yaml", r"field trpo\.cg_iters must lie in \[1, 1000\]")),
    Case("a batch that does not fit in memory", "variant", variant(VARIANT + "overrides: {num_envs: 1024, horizon: 65536}\n"),
         (r"variants/broken\.yaml", "field horizon", "exceeds the limit of 1,048,576")),
    # Values that could only fail later.
    Case("NaN entropy coefficient", "variant", variant(VARIANT + "overrides: {ppo: {objective: {ent_coef: .nan}}}\n"),
         (r"variants/broken\.yaml", r"field ppo\.objective\.ent_coef must be a finite number", "nan")),
    Case("negative entropy coefficient", "variant", variant(VARIANT + "overrides: {ppo: {objective: {ent_coef: -0.01}}}\n"),
         (r"variants/broken\.yaml", r"field ppo\.objective\.ent_coef must lie in \[0, 1000\]", "-0.01")),
    Case("negative vf_coef", "variant", variant(VARIANT + "overrides: {ppo: {vf_coef: -1}}\n"),
         (r"variants/broken\.yaml", r"field ppo\.vf_coef must lie in \[0, 1000\]", "-1")),
    Case("infinite log_std_init", "variant", variant(VARIANT + "overrides: {log_std_init: -.inf}\n"),
         (r"variants/broken\.yaml", "field log_std_init must be a finite number", "-inf")),
    Case("infinite Adam epsilon", "variant", variant(VARIANT + "overrides: {ppo: {adam_eps: .inf}}\n"),
         (r"variants/broken\.yaml", "field ppo.adam_eps must be a finite number", "inf")),
    Case("NaN learning rate of a baseline", "variant",
         variant("label: x\npreset: a2c_mujoco\noverrides: {a2c: {learning_rate: .nan}}\n"),
         (r"variants/broken\.yaml", r"field a2c\.learning_rate must be a finite number", "nan")),
    Case("NaN cg_damping", "variant", variant("label: x\npreset: trpo_mujoco\noverrides: {trpo: {cg_damping: .nan}}\n"),
         (r"variants/broken\.yaml", r"field trpo\.cg_damping must be a finite number")),
    Case("infinite max_kl", "variant", variant("label: x\npreset: trpo_mujoco\noverrides: {trpo: {max_kl: .inf}}\n"),
         (r"variants/broken\.yaml", r"field trpo\.max_kl must be a finite number")),
    Case("total_steps in a variant that the scale replaces", "study",
         write("experiments/variants/clip_0.25.yaml", 'label: "Clipping, ε = 0.25"\npreset: ppo_mujoco_paper\n'
               "overrides: {total_steps: 5000, ppo: {objective: {clip_epsilon: 0.25}}}\n"),
         (r"variants/clip_0\.25\.yaml", r"field overrides\.total_steps is set by the study's scale")),
    Case("unknown Atari protocol names the variant", "variant",
         variant("label: x\npreset: ppo_atari_paper\noverrides: {env_protocol: nosuch}\n"),
         (r"variants/broken\.yaml", "field env_protocol", "no Atari protocol 'nosuch'")),
    Case("preset choice whose key is not a name", "preset",
         preset('ppo.adam_eps: {paper_states: false, source:', '"adam eps!": {paper_states: false, source:'),
         (r"presets/ppo_mujoco_paper\.yaml", "field choices", "'adam eps!' is not a setting name")),
    Case("variant written for config schema 1", "variant", variant(VARIANT + "overrides: {epochs: 20}\n"),
         (r"variants/broken\.yaml", r"\['epochs'\] are PPO's settings", "section 'ppo'")),
    Case("preset documents a setting that is not one", "preset",
         preset('ppo.adam_eps: {paper_states: false, source:', 'adam_eps: {paper_states: false, source:'),
         (r"presets/ppo_mujoco_paper\.yaml", r"field choices\.adam_eps names no setting")),
    Case("label the plots cannot render", "variant", variant("label: 'Clip $\\epsilon'\npreset: ppo_mujoco_paper\n"),
         (r"variants/broken\.yaml", "field label", "cannot be shown", r"'\$'")),
    Case("label on two lines", "variant", variant('label: "Clip\\nping"\npreset: ppo_mujoco_paper\n'),
         (r"variants/broken\.yaml", "field label", "cannot be shown")),
    # Tracebacks before: now one line naming the file.
    Case("variant that is not UTF-8", "variant", variant(b"label: \xff\xfeClip\npreset: ppo_mujoco_paper\n"),
         (r"variants/broken\.yaml", "not UTF-8 text", "0xff at line 1")),
    Case("mixed-type mapping keys", "variant", variant(VARIANT + "overrides: {1: 2, horizon: 1024}\n"),
         (r"variants/broken\.yaml", "field names must be text", "got 1")),
    Case("complex mapping key", "variant", variant(VARIANT + "overrides:\n  ? [horizon, epochs]\n  : 1024\n"),
         (r"variants/broken\.yaml", "field names must be text", r"got \[")),
    Case("very deep nesting", "variant", variant(VARIANT + "overrides: {horizon: " + "[" * 5000 + "]" * 5000 + "}\n"),
         (r"variants/broken\.yaml", "nested deeper than 20 levels")),
    Case("manifest.json nested too deep", "report",
         chain(finished_results, write(f"{RUNS}/Hopper-v5/no_clip/seed0/manifest.json", "[" * 100000 + "]" * 100000)),
         (r"^table1_report: error: corrupt manifest \S+/Hopper-v5/no_clip/seed0/manifest\.json",)),
    Case("manifest.json that is a JSON list", "report",
         chain(finished_results, write(f"{RUNS}/Hopper-v5/no_clip/seed0/manifest.json", "[1, 2]")),
         (r"^table1_report: error: manifest \S+/Hopper-v5/no_clip/seed0/manifest\.json is not a JSON object",)),
    Case("results is a file, pipeline", "snakemake", write("results", "not a folder\n"),
         ("cannot write results: results is a file", "no job was started"),
         args={"argv": ["-n", "--config", "studies=[table1]", "scale=smoke"]}),
]


def _drop_choices(root: Path, replacement: str = "") -> None:
    path = root / "experiments/presets/ppo_mujoco_paper.yaml"
    text = path.read_text()
    assert "\nchoices:\n" in text, "the preset no longer has a choices section: update this case"
    path.write_text(text[: text.index("\nchoices:\n") + 1] + replacement)


def _read_only(folder: Path) -> None:
    for path in [folder, *folder.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555)


# ---- where the error surfaces ----------------------------------------------------------------------------

def _loader_error(load) -> str:
    try:
        load()
    except Exception as err:  # noqa: BLE001 - anything but a ConfigError is a failure of the case
        assert isinstance(err, ConfigError), f"{type(err).__name__} instead of ConfigError: {err}"
        return str(err)
    raise AssertionError("the bad input was accepted")


def in_variant(root, case, **_):
    return _loader_error(lambda: load_variant(case.args.get("variant", "broken"), root / "experiments"))


def in_preset(root, case, **_):
    return _loader_error(lambda: load_variant("clip_0.2", root / "experiments"))


def in_study(root, case, **_):
    return _loader_error(lambda: load_study(case.args.get("study", "table1"), case.args.get("scale", "smoke"),
                                            case.args.get("seeds"), root / "experiments"))


def _unprivileged(cmd: list[str]) -> list[str]:
    """``cmd`` run so that permission bits apply to it, also when the tests run as root."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    if setpriv is None or subprocess.run([setpriv, *NO_OVERRIDE, "true"], capture_output=True).returncode:
        pytest.skip("running as root and cannot drop CAP_DAC_OVERRIDE: a read-only folder is writable")
    return [setpriv, *NO_OVERRIDE, *cmd]


def in_snakemake(root, case, **_):
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", *case.args["argv"]]
    if case.args.get("unprivileged"):
        cmd = _unprivileged(cmd)
    try:
        done = subprocess.run(cmd, cwd=root, capture_output=True, text=True, timeout=300)
    finally:
        for path in [root / "results", *(root / "results").rglob("*")] if (root / "results").is_dir() else []:
            if path.is_dir():
                path.chmod(0o755)
    output = done.stdout + done.stderr
    assert done.returncode != 0, output[-3000:]
    assert "Traceback" not in output and "Failed validating" not in output, output[-3000:]
    assert "Select jobs to execute" not in output, "a job was started"
    lines = output.splitlines()
    heads = [i for i, line in enumerate(lines) if line.startswith("WorkflowError")]
    assert heads, output[-3000:]
    message = lines[heads[0] + 1:]
    # Snakemake frames the message with where it was raised: "WorkflowError in file ...", then the
    # message, then '  File "...", line N, in ...'.
    end = next((i for i, line in enumerate(message) if line.startswith("  File ")), len(message))
    return "\n".join(message[:end])


def in_job(root, case, capsys, **_):
    """The job with the plan of Hopper's clip_0.2 and no_clip runs, as the planner makes it (beside results/, which
    a case may have made a file), then edited as the case says."""
    study = load_study("table1", "smoke", experiments_dir=root / "experiments")
    plan = make_plan(root / "results", study, [r for r in study.runs() if r.task == "Hopper-v5"
                                               and r.variant.name in ("clip_0.2", "no_clip")])
    case.args.get("plan", lambda _: None)(plan)
    (root / "plan.json").write_text(json.dumps(plan))
    code = ppo.pipeline.job.main(["--plan", str(root / "plan.json")])
    assert code == 2
    return capsys.readouterr().err


def _script(name: str):
    spec = importlib.util.spec_from_file_location(f"bad_inputs_{name}", ROOT / "workflow" / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def in_report(root, case, capsys, **_):
    runs = root / RUNS
    code = _script("table1_report").main([
        "--runs", str(runs), "--manifests", *map(str, sorted(runs.glob("*/*/seed*/manifest.json"))),
        "--random", str(root / "results/random/Hopper-v5.parquet"), "--reference-dir", str(root / "reference"),
        "--out-dir", str(root / "results/table1/smoke/report"), "--n-resamples", "200"])
    assert code == 1
    return capsys.readouterr().err


def in_random_scores(root, case, capsys, **_):
    out = root / "results/table1/smoke/report/random_scores.csv"
    code = _script("random_scores").main([str(out), str(root / "results/random/Hopper-v5.parquet")])
    assert code == 1 and not out.exists()
    return capsys.readouterr().err


def in_checkpoint(root, case, **_):
    messages = []
    assert load_checkpoint(root / CHECKPOINT, messages.append) is None
    assert len(messages) == 1, messages
    return messages[0]


WHERE = {"variant": in_variant, "preset": in_preset, "study": in_study, "snakemake": in_snakemake, "job": in_job,
         "report": in_report, "random_scores": in_random_scores, "checkpoint": in_checkpoint}


# ---- the test --------------------------------------------------------------------------------------------

def files_under(folder: Path) -> dict[Path, bytes]:
    if folder.is_file():
        return {folder: folder.read_bytes()}
    return {p: p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()} if folder.is_dir() else {}


def assert_nothing_lost(before: dict[Path, bytes], after: dict[Path, bytes]) -> None:
    """Every earlier file is unchanged; an unreadable checkpoint may only have moved to <name>.corrupt*."""
    for path, data in before.items():
        if path.suffix == ".pt" and path.parent.name == "checkpoints":
            kept = [p for p, d in after.items() if d == data and p.name.startswith(path.name)]
            assert kept, f"{path} was deleted instead of being moved aside"
            assert not path.exists() or after.get(path) == data
        else:
            assert after.get(path) == data, f"{path} was {'changed' if path in after else 'deleted'}"


@pytest.fixture
def project(tmp_path):
    return copy_project(tmp_path)


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c.name, marks=[pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else [])
    for c in CASES
])
def test_bad_input_gives_one_line_naming_file_and_field(case, project, monkeypatch, capsys):
    case.build(project)
    before = files_under(project / "results")
    message = WHERE[case.where](project, case, monkeypatch=monkeypatch, capsys=capsys).strip()
    assert message and "\n" not in message, f"not one line:\n{message}"
    for pattern in case.expect:
        assert re.search(pattern, message), f"{pattern!r} not found in: {message}"
    assert_nothing_lost(before, files_under(project / "results"))
    assert not list(project.rglob("PWNED")), "a command from the input was executed"


def test_the_corpus_is_complete():
    """The issue asks for at least 25 malformed inputs, covering each of these kinds."""
    assert len(CASES) >= 25 and len({c.name for c in CASES}) == len(CASES)
    assert set(WHERE) == {c.where for c in CASES}
