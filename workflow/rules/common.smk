import sys
from pathlib import Path

PROJECT = Path(workflow.basedir).parent
sys.path.insert(0, str(PROJECT))

from ppo.config import ConfigError
from ppo.study import load_study

# Every experiment file is read and validated here, before any job starts: a bad file stops the plan
# with its path and field named, and loses nothing already computed.
try:
    STUDY = load_study(config["study"], config["scale"], config.get("seeds"))
except ConfigError as err:
    raise WorkflowError(f"invalid experiment configuration: {err}")

GROUPS = STUDY.groups(config["group_size"])
RESULTS = f"results/{STUDY.name}/{STUDY.scale}"
RUNS_DIR = f"{RESULTS}/runs"
RUN_FILES = ("episodes.parquet", "updates.parquet", "manifest.json")
PY = sys.executable


def run_dir(run):
    return f"{RUNS_DIR}/{run.task}/{run.variant.name}/seed{run.seed}"


def run_outputs(runs):
    return [f"{run_dir(r)}/{name}" for r in runs for name in RUN_FILES]


def random_score(task):
    return f"results/random/{task}.parquet"
