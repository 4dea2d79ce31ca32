#!/usr/bin/env bash
# Train a batch of the paper-scale grid's groups on another machine (many cores, no Snakemake needed) and
# pack what it made into archive parts small enough to carry back (docs/paper-scale.md):
#
#   here:   .venv/bin/python -m ppo.pipeline.remote plan --studies table1 figure3 table1_v4 table1_bootstrap swimmer_details --scale paper --group-size 11 > jobs.tsv
#   there:  scripts/remote_batch.sh jobs.tsv 16 1500 OUTDIR     # 16 workers, stop jobs after 1500 s
#   here:   cat OUTDIR/batch.tgz.part* | tar xzf - -C DIR && scripts/paper_grid.sh publish --from DIR
#
# There, the code needs the project's dependencies importable (PYTHONPATH may point at unpacked wheels).
# PPO_REPRO_GIT='{"commit": ..., "dirty": false}' names the commit when the copy has no .git. Jobs still
# running at the deadline stop; their checkpoints (results/<study>/paper/checkpoints) come back in the
# archive, and a later run of the same group, here or there, resumes from them.
set -euo pipefail
jobs="$1" workers="$2" seconds="$3" out="$4"
mkdir -p "$out"
python3 -m ppo.pipeline.remote run "$jobs" --workers "$workers" --until "$seconds" --log-dir logs/batch | tee logs/batch.txt
# parts of 15 MB: some transports cap a file at 16 MiB
tar czf - results logs | split -b 15M - "$out/batch.tgz.part"
ls -la "$out"
