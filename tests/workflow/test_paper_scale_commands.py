"""The MuJoCo and the Atari paper scales are separate commands: a study list with Atari at scale=paper is
refused before planning anything, and the MuJoCo command plans no Atari run."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration  # runs Snakemake, SLURM or a shell command: minutes

ROOT = Path(__file__).resolve().parents[2]
# What a run already left in this checkout's results/ (a finished ./repro paper, a plan) must not change what these
# plans say: Snakemake plans in a workspace that links everything of the checkout but its results and logs.
OWN_STATE = {"results", "logs", ".snakemake", ".git"}


@pytest.fixture(scope="module")
def snakemake_dry_run(tmp_path_factory):
    workspace = tmp_path_factory.mktemp("workspace")
    for entry in ROOT.iterdir():
        if entry.name not in OWN_STATE:
            (workspace / entry.name).symlink_to(entry)
    return [sys.executable, "-m", "snakemake", "--directory", str(workspace), "--snakefile",
            str(workspace / "workflow" / "Snakefile"), "-n", "--quiet", "rules"]


def test_atari_in_a_list_of_studies_at_paper_scale_is_refused(snakemake_dry_run):
    done = subprocess.run([*snakemake_dry_run, "--config", "studies=[table1,figure3,atari]", "scale=paper"],
                          capture_output=True, text=True, timeout=300)
    said = done.stdout + done.stderr  # Snakemake prints a WorkflowError on stdout
    assert done.returncode != 0
    assert "Atari at paper scale is 441 runs" in said and "studies=[table1,figure3]" in said


def test_mujoco_paper_scale_plans_no_atari_run(snakemake_dry_run):
    done = subprocess.run([*snakemake_dry_run, "--forceall", "--config", "studies=[table1,figure3]", "scale=paper"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # a published paper-scale run is copied (one job per study: copy_table1_published), an unpublished one trained
    for task in ("HalfCheetah", "Hopper", "InvertedDoublePendulum", "InvertedPendulum", "Reacher",
                 "Swimmer", "Walker2d"):
        assert re.search(rf"^(train_table1_{task}-|copy_table1_published\s)", done.stdout, re.MULTILINE), task
    assert not re.search(r"^copy_\S+-seed\d", done.stdout, re.MULTILINE)  # no job copies a single run
    # our random policy's published scores are copied (published/random), not measured again
    assert re.search(r"^copy_random\s+7$", done.stdout, re.MULTILINE) and "random_policy" not in done.stdout
    assert "atari" not in done.stdout


def test_a_grid_trains_its_studies_in_the_order_it_names_them(snakemake_dry_run):
    """studies_in_order (scripts/paper_grid.sh sets it): every new Table 1 group before any Figure 3 one, where by
    default Figure 3's groups, which hold all their seeds, would start in the first seed's wave."""
    def priorities(in_order):
        done = subprocess.run([*snakemake_dry_run[:-2], "--config", "studies=[table1,figure3]", "scale=smoke", "seeds=5",
                               "group_size=11", f"studies_in_order={in_order}"], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        jobs = re.findall(r"^rule (train_(table1|figure3)_\S+):\n(?:    .*\n)*?    priority: (\d+)$", done.stdout,
                          re.MULTILINE)
        by_study = {study: [int(p) for _, s, p in jobs if s == study] for study in ("table1", "figure3")}
        assert len(by_study["table1"]) == 10 and len(by_study["figure3"]) == 10, jobs  # 2 smoke tasks
        # Figure 3's jobs, highest priority first, by baseline (train_figure3_<Task>-<variant>-<n>)
        by_study["figure3 baselines"] = [name.split("-", 1)[1].rsplit("-", 1)[0] for name, _, p in
                                         sorted((j for j in jobs if j[1] == "figure3"), key=lambda j: -int(j[2]))]
        return by_study

    in_order = priorities(True)
    assert min(in_order["table1"]) > max(in_order["figure3"])
    # and a baseline at a time, in the study file's order
    assert in_order["figure3 baselines"] == [v for v in ("a2c", "a2c-trust-region", "trpo", "vpg-adaptive", "cem")
                                             for _ in range(2)]
    mixed = priorities(False)
    assert min(mixed["table1"]) < max(mixed["figure3"])  # seeds 1-4 of Table 1 after Figure 3's groups of seeds 0-4


def test_atari_three_plans_the_three_games_ppo_and_a2c_of_the_paper_scale():
    """./repro atari-three: the paper scale's own runs (same folders, so published ones are copied, all of them by
    one job), the others trained one a job; its games and algorithms are the atari study's selection three."""
    from ppo.pipeline.study import is_current, load_study, narrowed

    assert load_study("atari", "paper").selection("three") == (("ALE/Pong-v5", "ALE/Breakout-v5", "ALE/BeamRider-v5"),
                                                               ("atari_ppo", "atari_a2c"))
    done = subprocess.run([str(ROOT / "repro"), "atari-three", "--verbose", "-n", "--forceall", "--quiet", "rules"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    # a run not published is trained one a job (train_atari_<Game>-<algo>-<n>); the published ones are copied by one
    # job (copy_atari_published)
    names = set(re.findall(r"^((?:train|copy)_atari_\S+)\s", done.stdout, re.MULTILINE))
    trained = {re.match(r"train_atari_(\w+?)-(ppo|a2c)-(\d+)$", n).groups() for n in names if n.startswith("train_")}
    study = narrowed(load_study("atari", "paper"), ["ALE/Pong-v5", "ALE/Breakout-v5", "ALE/BeamRider-v5"],
                     ["atari_ppo", "atari_a2c"])
    published = [r for r in study.runs() if is_current(ROOT / "published", study, r)]
    assert (names - {n for n in names if n.startswith("train_")}) == ({"copy_atari_published"} if published else set())
    assert len(trained) + len(published) == 18  # 3 games x 2 algorithms x 3 seeds
    per_game = {(g, a) for g, a, _ in trained} | {(r.task.split("/")[1].removesuffix("-v5"),
                                                   r.variant.name.removeprefix("atari_")) for r in published}
    assert sorted(per_game) == [(g, a) for g in ("BeamRider", "Breakout", "Pong") for a in ("a2c", "ppo")]


def test_narrowing_a_study_keeps_its_runs_and_refuses_in_one_line():
    from ppo.config.errors import ConfigError
    from ppo.pipeline.study import load_study, narrowed

    whole = load_study("atari", "paper")
    assert whole.name == "atari"  # its own name, not one of its variants'
    part = narrowed(whole, ["ALE/Pong-v5"], ["atari_ppo"])
    assert [r.run_id for r in part.runs()] == ["ALE/Pong-v5/atari_ppo/seed0", "ALE/Pong-v5/atari_ppo/seed1",
                                               "ALE/Pong-v5/atari_ppo/seed2"]
    by_id = {r.run_id: r for r in whole.runs()}
    assert all(r.config_digest == by_id[r.run_id].config_digest for r in part.runs())
    for tasks, variants, says in ((["ALE/Pong"], None, "field tasks: 'ALE/Pong' is not a task of study atari"),
                                  (None, ["atari_a2c"], "field variants must keep the study's anchor 'atari_ppo'"),
                                  (None, ["atari_ppo", "ppo"], "field variants: 'ppo' is not a variant")):
        try:
            narrowed(whole, tasks, variants)
        except ConfigError as err:
            assert says in str(err) and "\n" not in str(err)
        else:
            raise AssertionError(f"{tasks} {variants} accepted")
