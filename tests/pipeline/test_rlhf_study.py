"""The RLHF study (experiments/studies/rlhf.yaml, ppo/pipeline/rlhf_study.py) as the pipeline plans and runs it."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from project_copy import copy_project

from ppo.config.errors import ConfigError
from ppo.pipeline import rlhf_job as rlhf_run
from ppo.pipeline.reports import REPORTS
from ppo.pipeline.rlhf_study import find_run
from ppo.pipeline.study import load_study, plan_groups
from ppo.rlhf import train as rlhf_train

pytestmark = pytest.mark.integration  # runs Snakemake, SLURM or a shell command: minutes

ROOT = Path(__file__).resolve().parents[2]
SNAKEMAKE = [sys.executable, "-m", "snakemake"]
TINY = ["updates=3", "batch_size=16", "minibatch_size=8", "epochs=1", "sft.steps=20", "sft.batch_size=32",
        "reward_model.pairs=64", "reward_model.normalise_samples=64"]


def test_the_study_resolves_each_scale_into_cells():
    reduced = load_study("rlhf", "reduced")
    assert reduced.kind == "rlhf" and reduced.seeds == 2 and len(reduced.variants) == 23 and len(reduced.runs()) == 46
    cell = reduced.cell("clip_0.2-ref0")
    assert cell.blocks == ("surrogates", "reward_model")  # named by two blocks, trained once
    assert cell.config.updates == 60 and cell.config.reference_kl.beta == 0.0
    assert cell.config.objective.clip_epsilon == 0.2
    adaptive = reduced.cell("kl_adaptive_0.01-ref0.1").config
    assert adaptive.reference_kl.beta == 0.1 and adaptive.reference_kl.target is None
    assert adaptive.objective.kl_target == 0.01 and adaptive.objective.clip_epsilon is None
    assert reduced.cell("best_of_n").reference_beta is None and reduced.cell("best_of_n").config.algorithm == "best_of_n"
    assert reduced.cell("rm_pairs_16000-ref0").config.reward_model.pairs == 16000
    # pipeline seeds: 4k pairs (every setting but two), 1k, 16k, each built once per seed; seed 0 is the cell's own
    assert reduced.pipeline_seeds and len(reduced.models()) == 3 * 2
    run1 = find_run(reduced, "clip_0.2-ref0", 1)
    assert (run1.config.language.seed, run1.config.sft.seed, run1.config.reward_model.seed) == (1, 1, 1)
    assert find_run(reduced, "clip_0.2-ref0", 0).config == reduced.cell("clip_0.2-ref0").config
    assert run1.models_key == find_run(reduced, "clip_0.2-ref0.3", 1).models_key != run1.variant.models_key
    assert reduced.cell("grpo_kl_loss-ref0.03").config.reference_kl.placement == "loss"
    assert not reduced.cell("rloo_published-ref0.03").config.whiten_advantages
    assert reduced.tasks == ("rlhf_grammar",) and reduced.report in REPORTS
    assert {r.run_id for r in reduced.runs()} >= {"rlhf_grammar/clip_0.2-ref0.3/seed1", "rlhf_grammar/remax-ref0.03/seed0"}
    full = load_study("rlhf", "full")
    assert len(full.variants) == 100 and full.seeds == 3 and not full.reduced and full.cell("clip_0.2-ref0").config.updates == 150
    assert len(full.runs()) == 300 and len(full.models()) == 5 * 3  # 1k/4k/16k pairs, d = 32 and 128, per seed
    assert full.cell("ref_adaptive").config.reference_kl.horizon == 640
    assert sorted(b for c in full.variants for b in c.blocks if c.name == "clip_0.2-ref0.1") == ["reward_model", "surrogates"]
    assert load_study("rlhf", "smoke", seeds=3).seeds == 3  # the pipeline's seeds override
    # a changed setting changes the run's digest (and so re-trains it); the same setting keeps it
    assert reduced.runs()[0].config_digest == load_study("rlhf", "reduced").runs()[0].config_digest
    assert reduced.cell("clip_0.2-ref0").config != reduced.cell("clip_0.2-ref0.01").config
    # the RLHF runs are never packed into ppo.pipeline.job's training groups
    assert plan_groups([reduced], 0, "/nonexistent") == []


def _bad_study(tmp_path: Path, old: str, new: str) -> Path:
    experiments = tmp_path / "experiments"
    shutil.copytree(ROOT / "experiments", experiments)
    study = experiments / "studies" / "rlhf.yaml"
    text = study.read_text()
    assert old in text
    study.write_text(text.replace(old, new, 1))
    return experiments


@pytest.mark.parametrize("old, new, field", [
    ("reference_betas: [0, 0.01, 0.03, 0.1, 0.3]\n  controller", "reference_betas: [0, -0.1]\n  controller",
     "field blocks.surrogates.reference_betas must list numbers >= 0, got -0.1"),
    ('variants: [no_clip, "clip_*"', 'variants: [no_clip, "clipp_*"', "field blocks.surrogates.variants: entry 'clipp_*' matches no file"),
    ("overrides: {updates: 60}", "overrides: {updates: 0}", "field scales.reduced.overrides (applied to"),
    ("overrides: {updates: 60}", "overrides: {updatez: 60}", "updatez"),
    ("    seeds: 2\n", "    seeds: two\n", "field scales.reduced.seeds must be a positive integer"),
    ("kind: rlhf", "kind: rhlf", "field kind must be one of ['mujoco', 'rlhf']"),
    ("pipeline_seeds: true", "pipeline_seeds: yes please", "field pipeline_seeds must be true or false"),
    ("  best_of_n:\n    description", "  best_of_n:\n    variant: [best_of_n]\n    description", "unknown field(s)"),
])
def test_a_bad_study_file_is_one_line_naming_the_file_and_field(tmp_path, old, new, field):
    experiments = _bad_study(tmp_path, old, new)
    with pytest.raises(ConfigError) as err:
        load_study("rlhf", "reduced", experiments_dir=experiments)
    message = str(err.value)
    assert "\n" not in message and field in message, message
    assert str(experiments / "studies" / "rlhf.yaml") in message or "variants" in message


def test_a_diverged_run_is_recorded_not_a_crash(tmp_path, monkeypatch):
    """Non-finite losses: the run stops at that update, writes its records and a manifest saying so, exits 0."""
    real = rlhf_train.objective_terms

    def poisoned(*args, **kwargs):
        loss, surr = real(*args, **kwargs)
        return loss * float("nan"), surr

    monkeypatch.setattr(rlhf_train, "objective_terms", poisoned)
    sets = [x for item in TINY for x in ("--set", item)]
    assert rlhf_run.main(["--variant", "clip_0.2", "--seed", "0", "--out", str(tmp_path / "run"), *sets]) == 0
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert manifest["status"] == "diverged" and manifest["diverged_at_update"] == 0
    assert manifest["platform"]["key"].count("-") >= 2  # the numerics platform, as MuJoCo and Atari runs record it
    assert 0 < manifest["cpu_seconds"]  # what the run cost, as MuJoCo and Atari runs record it
    updates = pd.read_parquet(tmp_path / "run" / "updates.parquet")
    assert list(updates["update"]) == [0] and updates["gold_reward"].notna().all()


def test_a_study_run_with_pipeline_seeds_equals_the_run_started_by_hand(tmp_path):
    """Seed 1 of the smoke study (pipeline seeds: its own grammar, SFT and reward model) is the hand-started run with
    the smoke scale's settings and --pipeline-seeds, bit for bit."""
    study = load_study("rlhf", "smoke", seeds=2)
    run = find_run(study, "clip_0.2-ref0.1", 1)
    assert rlhf_run.main(["--study", "rlhf", "--scale", "smoke", "--seeds", "2", "--cell", "clip_0.2-ref0.1",
                          "--seed", "1", "--digest", run.config_digest, "--out", str(tmp_path / "study"),
                          "--models-cache", str(tmp_path / "models")]) == 0
    sets = ["updates=3", "batch_size=16", "minibatch_size=8", "epochs=1", "sft.steps=20", "sft.batch_size=32",
            "reward_model.pairs=64", "reward_model.normalise_samples=64", "best_of_n.ns=[1,2,4]", "best_of_n.prompts=8",
            "reference_kl.beta=0.1", "reference_kl.target=null"]
    assert rlhf_run.main(["--variant", "clip_0.2", "--seed", "1", "--pipeline-seeds", "--out", str(tmp_path / "hand"),
                          *[x for item in sets for x in ("--set", item)]]) == 0
    for name in ("updates.parquet", "samples.parquet"):
        assert pd.read_parquet(tmp_path / "study" / name).equals(pd.read_parquet(tmp_path / "hand" / name))
    study_manifest, hand_manifest = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("study", "hand"))
    assert study_manifest["config"] == hand_manifest["config"] and study_manifest["config"]["language"]["seed"] == 1
    assert study_manifest["pipeline_seeds"] and hand_manifest["pipeline_seeds"]
    assert study_manifest["models_key"] == run.models_key == hand_manifest["models_key"]


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    return copy_project(tmp_path_factory.mktemp("project"))


REPORT = "results/rlhf/smoke/report"


def snakemake(project, *args):
    targets = [f"{REPORT}/{name}" for name, _ in REPORTS["rlhf"].files()]
    return subprocess.run([*SNAKEMAKE, "--cores", "2", *args, *targets, "--config", "studies=[rlhf]", "scale=smoke"],
                          cwd=project, capture_output=True, text=True, timeout=600)


def test_the_smoke_study_runs_through_snakemake(project):
    done = snakemake(project)
    assert done.returncode == 0, done.stderr[-3000:]
    peak = pd.read_csv(project / REPORT / "rlhf_peak_final.csv")
    assert sorted(peak["cell"]) == ["best_of_n", "clip_0.2-ref0", "clip_0.2-ref0.1", "grpo-ref0.1"]
    assert (peak["n_runs"] == 1).all() and (peak["n_diverged"] == 0).all()
    for name in ("rlhf_samples.csv", "rlhf_diagnostics.csv", "rlhf_reward_models.csv", "rlhf_diagnostics.png"):
        assert (project / REPORT / name).stat().st_size > 0
    assert set(pd.read_csv(project / REPORT / "rlhf_samples.csv")["point"]) == {"proxy peak", "gold peak", "end"}
    assert list(pd.read_csv(project / REPORT / "rlhf_frontier.csv")["reference_beta"]) == [0.1]
    assert "SMOKE" in (project / REPORT / "rlhf_peak_final.md").read_text()
    run = project / "results/rlhf/smoke/runs/rlhf_grammar/clip_0.2-ref0.1/seed0"
    manifest = json.loads((run / "manifest.json").read_text())
    study = load_study("rlhf", "smoke")
    resolved = json.loads(json.dumps(study.cell("clip_0.2-ref0.1").config.to_dict()))  # tuples as JSON lists
    assert manifest["config"] == resolved and manifest["seed"] == 0
    assert manifest["config_digest"] == find_run(study, "clip_0.2-ref0.1", 0).config_digest
    assert manifest["status"] == "completed"
    assert manifest["packages"]["torch"] and "commit" in manifest["git"] and manifest["run_id"] == \
        "rlhf_grammar/clip_0.2-ref0.1/seed0"
    updates = pd.read_parquet(run / "updates.parquet")
    assert len(updates) == 4 and not pd.read_parquet(run / "samples.parquet").empty
    assert updates["heldout_gold_reward"].notna().tolist() == [True, False, False, True]  # update 0 and the last
    assert manifest["pipeline_seeds"] is True
    # the starting models: one job built them, every run loaded them, nothing half-written is left
    models = list((project / "results/rlhf/smoke/models").iterdir())
    assert [m.name for m in models] == [f"models-{study.cell('clip_0.2-ref0').models_key}.pt"]
    assert manifest["models"]["cached"].endswith(models[0].name)
    again = subprocess.run([*SNAKEMAKE, "-n", "--config", "studies=[rlhf]", "scale=smoke"], cwd=project,
                           capture_output=True, text=True)
    assert "train_rlhf" not in again.stdout and "rlhf_models" not in again.stdout  # nothing re-trains


def test_a_bad_study_file_stops_the_plan_with_one_line(project):
    study = project / "experiments/studies/rlhf.yaml"
    original = study.read_text()
    try:
        study.write_text(original.replace("reference_betas: [0, 0.1]", "reference_betas: [0, 0.1, 0.1]"))
        failed = subprocess.run([*SNAKEMAKE, "-n", "--config", "studies=[rlhf]", "scale=smoke"], cwd=project,
                                capture_output=True, text=True)
        assert failed.returncode != 0
        line = [x for x in (failed.stdout + failed.stderr).splitlines() if "invalid experiment configuration" in x]
        assert len(line) == 1 and "rlhf.yaml: field scales.smoke.blocks.surrogates.reference_betas lists 0.1 more " \
            "than once" in line[0], failed.stderr[-2000:]
    finally:
        study.write_text(original)
