#!/usr/bin/env bash
# The paper-scale Table 1 and Figure 3 grid, trained in the background across sessions that may each be
# stopped after a few hours (docs/paper-scale.md):
#
#   scripts/paper_grid.sh start [REV]   train from a clone at a committed revision (default: this repo's HEAD)
#   scripts/paper_grid.sh status        what is running, what has finished, core-hours so far
#   scripts/paper_grid.sh publish [--from DIR]   copy finished runs' records into published/, commit them
#   scripts/paper_grid.sh watch [MIN]   publish every MIN minutes (default 10) while the grid runs
#   scripts/paper_grid.sh stop
#
# The clone ($GRID, default ../ppo-grid beside this repo) is never the tree being edited. Training runs
# under nice, in jobs of at most $GROUP_SIZE runs (15-40 minutes each on 2 cores). A group checkpoints
# every 10 updates, so a stopped session costs at most that much per job: `start` again resumes from the
# checkpoints when the clone survived, and trains from the beginning when it did not. Runs already in
# published/ at the clone's revision are copied, not trained.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
GRID="${GRID:-$(dirname "$REPO")/ppo-grid}"
STUDIES="${STUDIES:-table1,figure3}"
GROUP_SIZE="${GROUP_SIZE:-3}"
CORES="${CORES:-$(nproc)}"
LOG="$GRID/grid.log"

die() { echo "paper_grid: $*" >&2; exit 1; }
# The grid runs in its own session (setsid), whose id is the leader's pid, kept in $GRID/grid.pid.
running() { [ -f "$GRID/grid.pid" ] && pgrep -s "$(cat "$GRID/grid.pid")" > /dev/null; }

case "${1:-status}" in
  start)
    rev="$(git -C "$REPO" rev-parse "${2:-HEAD}")"
    running && die "already running in $GRID (scripts/paper_grid.sh stop first)"
    [ -d "$GRID/.git" ] || git clone -q --no-checkout "$REPO" "$GRID"
    git -C "$GRID" fetch -q "$REPO" "$rev"
    git -C "$GRID" checkout -q --detach "$rev"
    "$GRID/repro" setup
    # A stopped session leaves Snakemake's lock behind; nothing else uses this clone (checked above).
    "$GRID/.venv/bin/snakemake" --directory "$GRID" --unlock > /dev/null 2>&1 || true
    echo "$(date -Is) start $rev studies=[$STUDIES] group_size=$GROUP_SIZE cores=$CORES" >> "$GRID/grid.history"
    # setsid: the grid outlives the shell that started it (but not the session). A new session is its own
    # scheduler autogroup on Linux, which nice alone does not reach: the group's share drops to nice 19
    # too, so that anything else on the machine comes first.
    setsid nohup sh -c 'echo 19 > /proc/self/autogroup 2> /dev/null; exec nice -n 19 "$0" "$@"' \
      "$GRID/.venv/bin/snakemake" --directory "$GRID" --snakefile "$GRID/workflow/Snakefile" \
      --cores "$CORES" --keep-going --rerun-incomplete \
      --config "studies=[$STUDIES]" scale=paper group_size="$GROUP_SIZE" > "$LOG" 2>&1 < /dev/null &
    echo $! > "$GRID/grid.pid"
    echo "paper_grid: training in $GRID at ${rev:0:10} (log: $LOG)"
    ;;
  status)
    if running; then echo "running in $GRID"; else echo "not running"; fi
    (cd "$REPO" && .venv/bin/python -m ppo.publish --status --from "$GRID" "${@:2}")
    ;;
  publish)
    # more sources (an unpacked ppo.batch archive): scripts/paper_grid.sh publish --from DIR
    (cd "$REPO" && .venv/bin/python -m ppo.publish --from "$GRID" "${@:2}" --commit)
    ;;
  watch)
    # Finished runs are committed as they come, so that none depends on this machine being kept; a
    # publish that finds the repository busy (another git command) is tried again next time.
    while running; do
      (cd "$REPO" && .venv/bin/python -m ppo.publish --from "$GRID" --commit) 2>&1 | head -1 || true
      sleep "$(( ${2:-10} * 60 ))"
    done
    ;;
  stop)
    if running; then
      pkill -s "$(cat "$GRID/grid.pid")"
      for _ in $(seq 60); do running || break; sleep 1; done  # Snakemake cleans up before it exits
    else
      echo "not running"
    fi
    ;;
  *)
    die "usage: scripts/paper_grid.sh start [REV] | status | publish [--from DIR] | watch [MIN] | stop"
    ;;
esac
