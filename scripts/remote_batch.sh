#!/usr/bin/env bash
# Train a batch of the grids' jobs on another machine (many cores, no Snakemake needed) and pack what it made into
# archive parts small enough to carry back (docs/paper-scale.md):
#
#   here:   .venv/bin/python -m ppo.pipeline.remote plan --studies table1 figure3 --scale paper --group-size 1 --seeds 10 > jobs.tsv
#           scripts/device_wheels.sh          # a device machine's Python 3.12 lacks gymnasium, ale-py, mujoco, pydantic
#   there:  WHEELS=.whl scripts/remote_batch.sh jobs.tsv 16 1500 OUTDIR     # 16 workers, stop jobs after 1500 s
#   here:   cat OUTDIR/batch.tar.xz.part* | xz -d | tar xf - -C DIR && python -m ppo.pipeline.publish --from DIR ... --commit
#           (unfinished jobs' checkpoints: DIR/results/<study>/<scale>/checkpoints/, into the grid clone's results/)
#
# There, the code needs the project's dependencies importable: WHEELS names a folder of wheels to install for this
# run only (pip --target, PYTHONPATH). PPO_REPRO_GIT='{"commit": ..., "dirty": false}' names the commit where the copy
# has no .git. Jobs still running at the deadline stop; their checkpoints come back in the archive, and a later run of
# the same group, here or there, resumes from them.
set -euo pipefail
jobs="$1" workers="$2" seconds="$3" out="$4"
mkdir -p "$out" logs
if [ -n "${WHEELS:-}" ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/remote-site "$WHEELS"/*.whl
  export PYTHONPATH="/tmp/remote-site${PYTHONPATH:+:$PYTHONPATH}"
fi
python3 -m ppo.pipeline.remote run "$jobs" --workers "$workers" --until "$seconds" --log-dir logs/batch | tee logs/batch.txt
# xz: 6 MB for a 9 MB Atari checkpoint (gzip 6.0); parts of 15 MiB, since some transports cap a file at 16 MiB
tar cf - results logs | xz -T0 -3 | split -b 15M - "$out/batch.tar.xz.part"
ls -la "$out"
