#!/usr/bin/env bash
# One device call that advances several grids at once, each with the code of its own commit (docs/paper-scale.md,
# "A larger machine can advance the runs"). A batch is .device/<name>/: `git archive REV` without published/ and
# grid-state/, the jobs it trains (a `python -m ppo.pipeline.remote plan` of that tree, trimmed by hand) and
# how many cores it gets. The copy has no .git, so PPO_REPRO_GIT records REV in each run (clean: the archive is REV).
#
#   here:   scripts/device_batch.sh add atari b44fcc1 9 atari-jobs.tsv    # name, commit, workers, jobs
#           scripts/device_batch.sh add seeds HEAD 7 seeds-jobs.tsv
#           scripts/device_wheels.sh                                      # once per machine: .wheels-py312/
#           scripts/device_batch.sh hold      # published/ and grid-state/ (tracked, >64 MiB) out of the tree
#   device: run with carry [".device", ".wheels-py312"]:   UNTIL=535 bash scripts/device_batch.sh run
#   here:   scripts/device_batch.sh release                               # put them back
#           scripts/device_batch.sh unpack /work/.device/N DIR            # DIR/<name>/results, DIR/<name>/logs
# then finished runs: `python -m ppo.pipeline.publish --studies S --from DIR/<name> [--seeds 10] --commit`;
# unfinished ones: copy DIR/<name>/results/<study>/paper/checkpoints/*.pt into that grid's clone and `carry`.
# Returned files are capped at 64 MiB: about nine Atari checkpoints (gzip, 5 MB each) per call.
set -euo pipefail
cd "$(dirname "$0")/.."
batches=.device
hold=../device-hold
usage() { echo "usage: scripts/device_batch.sh add NAME REV WORKERS JOBS | hold | release | run | unpack FROM DIR" >&2; exit 2; }

case "${1:-}" in
  add)
    [ $# = 5 ] || usage
    name="$2" rev="$(git rev-parse --verify "$3^{commit}")" workers="$4" jobs="$5"
    exclude="$(git rev-parse --git-path info/exclude)"; mkdir -p "$(dirname "$exclude")"
    grep -qx "/$batches/" "$exclude" 2>/dev/null || echo "/$batches/" >> "$exclude"
    rm -rf "${batches:?}/$name" && mkdir -p "$batches/$name"
    git archive "$rev" -- . ":(exclude)published" ":(exclude)grid-state" | tar x -C "$batches/$name"
    cp "$jobs" "$batches/$name/jobs.tsv"
    printf '%s\n%s\n' "$rev" "$workers" > "$batches/$name/batch"
    echo "$batches/$name: $(wc -l < "$jobs") jobs at ${rev:0:10} on $workers cores ($(du -sh "$batches/$name" | cut -f1))"
    ;;
  hold)
    if pgrep -f "^bash scripts/paper_grid.sh watch" > /dev/null; then
      echo "device_batch: a grid watch runs and would publish into a tree without published/: stop it first" \
           '(pkill -f "^bash scripts/paper_grid.sh watch")' >&2; exit 1
    fi
    [ -e "$hold" ] && { echo "device_batch: $hold exists: release first" >&2; exit 1; }
    mkdir -p "$hold" && mv published grid-state "$hold/"
    echo "held: $(du -sh "$hold" | cut -f1) in $hold; what travels: $(git ls-files -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1) bytes tracked + $(du -sb "$batches" .wheels-py312 | awk '{s+=$1} END {print s}') carried"
    ;;
  release)
    mv "$hold/published" "$hold/grid-state" . && rmdir "$hold"
    git status --short -- published grid-state | head -3
    ;;
  run)  # on the device machine, from the repository root
    out="${OUT:?OUT: where the device returns files}" until="${UNTIL:-535}"
    if ! python3 -c 'import gymnasium, ale_py, mujoco, pydantic, jsonschema' 2> /dev/null; then  # the device image lacks them
      python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/remote-site .wheels-py312/*.whl
      export PYTHONPATH=/tmp/remote-site
    fi
    export PYTHONUNBUFFERED=1
    nproc; lscpu | grep -E 'Model name|Vendor'
    for dir in "$batches"/*/; do
      name="$(basename "$dir")"; { read -r rev; read -r workers; } < "$dir/batch"
      mkdir -p "$dir/logs"  # older remote_batch.sh tee into logs/ before anything makes it
      (cd "$dir" && PPO_REPRO_GIT="{\"commit\": \"$rev\", \"dirty\": false}" \
         bash scripts/remote_batch.sh jobs.tsv "$workers" "$until" "$out/$name" 2>&1 | sed "s/^/$name: /") &
    done
    wait
    du -sh "$out"/*
    ;;
  unpack)
    [ $# = 3 ] || usage
    for part_dir in "$2"/*/; do
      name="$(basename "$part_dir")"; mkdir -p "$3/$name"
      if ls "$part_dir"batch.tgz.part* > /dev/null 2>&1; then cat "$part_dir"batch.tgz.part* | tar xzf - -C "$3/$name"
      else cat "$part_dir"batch.tar.xz.part* | xz -d | tar xf - -C "$3/$name"; fi
      echo "$3/$name: $(find "$3/$name/results" -name manifest.json | wc -l) finished runs, $(find "$3/$name/results" -name '*.pt' | wc -l) checkpoints"
    done
    ;;
  *) usage ;;
esac
