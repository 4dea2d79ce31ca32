import os
import re
import sys
from pathlib import Path

PROJECT = Path(workflow.basedir).parent
sys.path.insert(0, str(PROJECT))
# Jobs call plain `python`: the interpreter running Snakemake, whatever its path, so the shell commands
# (which Snakemake tracks as code) stay the same on every machine.
os.environ["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"

from ppo.config.errors import ConfigError
from ppo.config.registry import algorithm_spec
from ppo.envs import family_of
from ppo.envs.family import task_name
from ppo.pipeline import carry
from ppo.pipeline import study as ppo_study
from ppo.pipeline.plan import write_plan
from ppo.pipeline.publish import published_random
from ppo.pipeline.rlhf_study import write_copy_plan as write_rlhf_copy_plan
from ppo.pipeline.study import load_study, plan_groups, shared_runs
from ppo.training import layout
from ppo.training.records import unwritable

# Every experiment file is read and validated here, before any job starts: a bad file stops the plan
# with its path and field named, and loses nothing already computed.
try:
    STUDIES = [ppo_study.narrowed(load_study(name, config["scale"], config.get("seeds")), config.get("tasks"),
                                  config.get("variants")) for name in config["studies"]]
except ConfigError as err:
    raise WorkflowError(f"invalid experiment configuration: {' '.join(str(err).split())}") from None

# The paper-scale Atari study is 441 runs of about 5 hours each (a cluster's work): it runs only when
# asked for alone, never as part of a list such as the default one.
if config["scale"] == "paper" and len(STUDIES) > 1 and any(family_of(t).name == "atari"
                                                           for s in STUDIES for t in s.tasks):
    raise WorkflowError(
        "scale=paper with the Atari study in a list of studies: Atari at paper scale is 441 runs of about 5 h "
        "each, meant for a cluster. MuJoCo paper scale (Table 1 and Figure 3): --config 'studies=[table1,figure3]' "
        "scale=paper; Atari paper scale on its own: --config 'studies=[atari]' scale=paper")


# Snakemake's planning time grows faster than the number of run files (it matches every requested file against
# the rules that could make it): 2,200 runs plan in 18 s, 4,400 in 59 s, 22,000 in about half an hour, in
# silence (2026-11-27, AMD EPYC). A plan beyond MAX_PLANNED_RUNS is refused at once, in one line.
MAX_PLANNED_RUNS = 3000
_planned = sum(len(s.runs()) for s in STUDIES)
if _planned > MAX_PLANNED_RUNS:
    raise WorkflowError(
        f"{_planned:,} runs asked for (studies {', '.join(s.name for s in STUDIES)}, config seeds/tasks/variants): "
        f"more than {MAX_PLANNED_RUNS:,} runs take Snakemake minutes to hours to plan; ask for fewer seeds, or "
        "part of a study at a time (config tasks=[...] or variants=[...]); nothing was started")
if _planned > 1000:  # a sign of life before Snakemake's silent matching
    print(f"planning {_planned:,} runs: Snakemake matches each run's files against its rules before it prints "
          "anything (2,200 runs: 18 s, measured on a 2-core AMD EPYC)", file=sys.stderr, flush=True)

for _folder in ("results", "logs"):  # Snakemake would fail on it with a traceback while planning
    if Path(_folder).exists() and not Path(_folder).is_dir():
        raise WorkflowError(f"cannot write results: {_folder} is a file, not a folder; no job was started, "
                            "nothing was changed")


# Paths as Snakemake wants them (strings relative to the project), all from ppo.training.layout.
def results_dir(study):
    return str(layout.study_dir("results", study))


def runs_dir(study):
    return str(layout.runs_dir("results", study))


def report_dir(study):
    return str(layout.report_dir("results", study))


def benchmarks_dir(study):
    return str(layout.benchmarks_dir("results", study))


def log_dir(study):
    return str(layout.log_dir("logs", study))


def category(study):
    return f"{study.name} ({study.scale})"


def run_dir(study, run):
    return str(layout.run_dir("results", study, run))


def run_outputs(study, runs):
    return [f"{run_dir(study, r)}/{name}" for r in runs for name in study.run_files]  # an RLHF run's differ


def manifests(study):
    return [f"{run_dir(study, r)}/manifest.json" for r in study.runs()]


def is_current(study, run):
    """Finished, with every record, under the configuration the study now resolves for it."""
    return ppo_study.is_current("results", study, run)


# A run that an earlier study also has (same task, seed and resolved configuration: Figure 3's PPO is
# Table 1's clip 0.2) is trained once and copied; the copy has the same records (ppo.pipeline.study.shared_runs).
SHARED = shared_runs(STUDIES)
# A run published with the project (published/, ppo.pipeline.publish: the paper-scale reproduction) under the
# configuration the study now resolves is copied from there, not trained.
PUBLISHED_DIR = "published"


def copy_source(study, run):
    """The finished run that ``run`` copies, as (folder, the files its copy job waits for), or None when it must
    be trained. A run of another study: its manifest, written last (the job that makes it makes the rest). A
    published run: nothing, it is there when planned, and the copy checks every record against its manifest.
    Snakemake records the checksum of every input file of a job once per output file (N inputs x M outputs): a
    study's 231 published runs declared file by file (924 inputs, 924 outputs) cost it 80 s after a 2 s copy."""
    if (study.name, run.run_id) in SHARED:
        owner, owner_run = SHARED[(study.name, run.run_id)]
        return run_dir(owner, owner_run), [f"{run_dir(owner, owner_run)}/manifest.json"]
    if ppo_study.is_current(PUBLISHED_DIR, study, run):
        return str(layout.run_dir(PUBLISHED_DIR, study, run)), []
    return None


def copy_jobs():
    """The copies, one job per study and source: {(study name, source): (study, [(run, its folder, its files)])},
    the source being "published" or the name of the study that trains the shared runs. One process copies them
    all (ppo.pipeline.job, a copy plan): a process per run cost 3-9 s each (importing torch), 15 min for the
    paper scale's 430 copies on 2 cores."""
    jobs = {}
    for study in STUDIES:
        for run in study.runs():
            source = None if is_current(study, run) else copy_source(study, run)
            if source is not None:
                owner = SHARED[(study.name, run.run_id)][0].name if (study.name, run.run_id) in SHARED else "published"
                jobs.setdefault((study.name, owner), (study, []))[1].append((run, *source))
    return jobs


COPY_JOBS = copy_jobs()
# Only runs that are missing or whose resolved configuration changed are packed into training jobs, so
# a new variant or more seeds train just the new runs, and changing group_size re-trains nothing.
GROUPS = plan_groups(STUDIES, config["group_size"], "results", published=PUBLISHED_DIR)


def copy_id(owner):
    """A copy job's name within its study: ``published``, or ``from_<the study that trains the runs>``."""
    return "published" if owner == "published" else f"from_{owner}"


def written_folders():
    """Where the planned jobs write: checked before any job starts."""
    return ([run_dir(s, r) for s, g in GROUPS for r in g.runs]
            + [run_dir(s, r) for s, copies in COPY_JOBS.values() for r, _, _ in copies]
            + [str(d("results", s)) for s in STUDIES
               for d in (layout.plans_dir, layout.checkpoints_dir, layout.benchmarks_dir, layout.report_dir)]
            + ["results/random", "logs"])


def write_copy_plan(study, owner, copies):
    """A copy job's plan: ppo.pipeline.plan's, or an RLHF study's (ppo.pipeline.rlhf_study.write_copy_plan: its runs
    are resolved again by the job, at the pipeline's seeds, and copied by ppo.pipeline.rlhf_job; rlhf.smk)."""
    runs, sources, job = [run for run, _, _ in copies], [folder for _, folder, _ in copies], f"copy_{copy_id(owner)}"
    if study.kind == "rlhf":
        return write_rlhf_copy_plan("results", study, job, runs, sources, seeds=config.get("seeds"))
    return write_plan("results", study, job, runs, sources)


# Each pending job's plan (ppo.pipeline.plan): the runs it trains or copies as resolved here, each with its full
# config, seed, task, variant, folder and config digest, in results/<study>/<scale>/plans/<job>-<key>.json, the
# job's input. Written while planning (a dry run too: Snakemake wants a job's input to exist when it plans it, so a
# results folder that cannot be written stops a dry run here too), and only when its content changes: an
# unchanged plan keeps its mtime, so that Snakemake's mtime trigger re-runs a job whose runs' settings changed and
# nothing else. Finished runs are in no plan.
try:
    TRAIN_PLANS = {(s.name, g.group_id): str(write_plan("results", s, f"train_{g.group_id}", g.runs))
                   for s, g in GROUPS}
    COPY_PLANS = {(name, owner): str(write_copy_plan(study, owner, copies))
                  for (name, owner), (study, copies) in COPY_JOBS.items()}
except OSError as err:
    raise WorkflowError(f"cannot write results: {unwritable(written_folders()) or err}; no job was started, "
                        "nothing was changed") from None


onstart:
    # Not in a dry run, and only when there is work to do: a read-only results folder stops the run here,
    # before any job starts, instead of failing every job.
    problem = unwritable(written_folders())
    if problem:
        raise WorkflowError(f"cannot write results: {problem}; no job was started, nothing was changed")


onerror:
    # Snakemake has removed the failed jobs' outputs: put back the last good report (workflow/scripts/last_good.py)
    shell("python workflow/scripts/last_good.py restore results")


def random_score(task):
    return f"results/random/{task}.parquet"


def expected_seconds(study, group):
    """Rough single-core time of a training job, as the task's environment family estimates it from the
    simulator speeds measured in the pipeline config (ppo/envs/<family>.py FAMILY.seconds_per_step). Only
    its ordering matters: the longest jobs start first."""
    speeds = config.get("sim_steps_per_second") or {}
    return family_of(group.task).seconds_per_step(group.task, len(group.runs), speeds) * study.total_steps


def train_priority(study, group):
    """Groups with a checkpoint first, the furthest first; then new ones a study at a time in the order config studies
    names them when config studies_in_order is set (the ten-seed grid: Table 1, then Figure 3), a seed at a time, a
    variant at a time in the study file's order when studies_in_order is set (Figure 3: a baseline at a time), the
    longest first (ppo.pipeline.carry)."""
    saved = layout.checkpoint_path("results", study, group.task, [run_dir(study, r) for r in group.runs])
    ranks = carry.order_ranks(config["studies"], study, group, bool(config.get("studies_in_order")))
    return carry.train_priority(expected_seconds(study, group), saved, group.first_seed, *ranks)  # (`checkpoint`: Snakemake's)


def memory_mb(study, group):
    """A job's memory request, as its algorithm declares it (ppo/algorithms/<name>.py SPEC.memory_mb: one
    batch per run for the on-policy algorithms, ACER's replay buffer of frames)."""
    cfg = group.runs[0].variant.config
    return algorithm_spec(cfg.algorithm).memory_mb(cfg, len(group.runs), study.total_steps)


def runtime_minutes(study, group):
    """A job's time limit on a cluster: 2x the slowest rate its family measured (FAMILY.limit_seconds_per_step,
    docs/performance.md)."""
    per_step = family_of(group.task).limit_seconds_per_step(len(group.runs))
    return max(10, int(2 * study.total_steps * per_step / 60))
