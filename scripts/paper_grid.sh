#!/usr/bin/env bash
# The paper-scale Table 1 and Figure 3 grid, trained in the background across sessions that may each be
# stopped after a few hours (docs/paper-scale.md):
#
#   scripts/paper_grid.sh start [REV]   train from a clone at a committed revision (default: this repo's HEAD; it says
#                                       when the carried runs last trained with other code) and, while some are
#                                       missing, the Stable-Baselines3 reference runs
#   scripts/paper_grid.sh status        what is running, what has finished, job-hours so far, how far each
#                                       unfinished group got (its last checkpoint)
#   scripts/paper_grid.sh publish [--from DIR]   copy finished runs' records into published/, commit them
#   scripts/paper_grid.sh watch [MIN]   publish every MIN minutes (default 10) while the grid runs; with
#                                       CARRY_EVERY=M, carry (below) every M minutes too
#   scripts/paper_grid.sh stop [grid]   stop both, or the grid alone (the SB3 runs have no checkpoints)
#   scripts/paper_grid.sh carry         commit the unfinished groups' checkpoints (grid-state/, ppo.pipeline.carry): at the
#                                       end of a session, so that the next machine resumes them (`start` restores)
#
#   STUDIES=table1 SEEDS=10 scripts/paper_grid.sh start|status|publish|watch|stop|carry
#       Table 1 at ten seeds (issue 31): seeds 3-9 trained, a seed of all 77 cells at a time, so a stop leaves whole
#       seeds (ppo.pipeline.carry.train_priority); 0-2 copied from published/. STUDIES=table1,figure3 trains Table 1's
#       seeds, then Figure 3's (a grid trains its studies in the order STUDIES names them: studies_in_order)
#   GRID_NAME=atari scripts/paper_grid.sh start|status|publish|watch|stop|carry
#       the Atari paper scale's three games (./repro atari-three: the atari study's selection `three`, Pong,
#       Breakout, BeamRider; PPO and A2C, or ATARI_VARIANTS=atari_ppo alone), one run per job, in
#       ../atari-grid. A run is 3-5 h of one core, longer than a session: `carry` before a session ends, or the
#       next machine starts it again.
#   GRID_NAME=atari-checks scripts/paper_grid.sh start|status|publish|watch|stop|carry
#       the Atari checks, in this order (experiments/studies/atari_checks.yaml: PPO on the Nature CNN on Breakout,
#       6-9 h of one core per run; atari_checks_a2c_zoo.yaml: A2C at the SB3 zoo's settings on Pong; atari_checks_a2c.yaml:
#       A2C on the Nature CNN on Pong and BeamRider, about 5.5 h), in ../atari-checks, on one core (CORES=1);
#       STUDIES=atari_checks_a2c_zoo trains one of them
#   GRID_NAME=rlhf scripts/paper_grid.sh start|status|publish|watch|stop
#       the RLHF study at its full scale (experiments/studies/rlhf.yaml), in ../rlhf-grid, on one core (CORES=1);
#       publish copies its finished runs into published/rlhf/full (ppo.pipeline.publish --studies rlhf) and writes
#       docs/rlhf-results.md again from them (scripts/rlhf_results.py), both in one commit. No checkpoints (a run is
#       about a minute): nothing to carry, a stopped session loses the runs in progress only
#
# The clone ($GRID, default ../ppo-grid beside this repo) is never the tree being edited. Training runs
# under nice, in jobs of at most $GROUP_SIZE runs (10-45 minutes each on one core). A group checkpoints
# every 10 updates, so a stopped session costs at most that much per job: `start` again resumes from the
# checkpoints when the clone survived, and trains from the beginning when it did not. Runs already in
# published/ (this repository's, whatever the clone's revision) are copied, not trained.
#
# The 9 SB3 reference runs (benchmarks/mujoco_sb3_reference.py: Hopper, Walker2d, HalfCheetah x 3 seeds,
# 14-50 minutes each on one core as the machine's speed varies, no checkpoints) take one of the cores, one run at a time, until they
# are published; the grid gets the others. A larger machine can take grid jobs (ppo.pipeline.remote) but not these,
# whose length exceeds its calls. SB3_REFERENCE=0 leaves them out.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
case "${GRID_NAME:-mujoco}" in
  mujoco)
    GRID="${GRID:-$(dirname "$REPO")/ppo-grid}"; GRID_CONFIG=(); STATUS_SCOPE=(); RESULTS_PAGE=
    # SEEDS=10: the ten-seed Table 1 and Figure 3 (issue 31); seeds 0-2 are published and copied, not trained. Its
    # publish writes docs/seeds-results.md and README.md's seeds summary again (scripts/seeds_results.py)
    if [ -n "${SEEDS:-}" ]; then GRID_CONFIG=("seeds=$SEEDS"); STATUS_SCOPE=(--seeds "$SEEDS"); RESULTS_PAGE=seeds; fi ;;
  atari)
    GRID="${GRID:-$(dirname "$REPO")/atari-grid}"
    STUDIES="${STUDIES:-atari}" GROUP_SIZE="${GROUP_SIZE:-1}" SB3_REFERENCE=0
    # ./repro atari-three's games and algorithms: the selection `three` of experiments/studies/atari.yaml
    three="$(cd "$REPO" && .venv/bin/python -m ppo.pipeline.study --study atari --selection three --print tasks variants)" \
      || exit 1
    { read -r -a atari_tasks; read -r -a atari_variants; } <<< "$three"
    # ATARI_VARIANTS (comma-separated) narrows the variants; by default the selection's, PPO's carried runs first (start)
    ATARI_VARIANTS="${ATARI_VARIANTS:-$(IFS=,; echo "${atari_variants[*]}")}"
    GRID_CONFIG=("tasks=[$(IFS=,; echo "${atari_tasks[*]}")]" "variants=[$ATARI_VARIANTS]")
    # status counts ./repro atari-three's 18 runs (PPO and A2C), not the study's 441
    STATUS_SCOPE=(--tasks "${atari_tasks[@]}" --variants "${atari_variants[@]}") RESULTS_PAGE=atari
    # the runs with a checkpoint that start first (counted by start), of the variants trained now only
    IFS=, read -r -a trained_variants <<< "$ATARI_VARIANTS"; RESUMABLE_SCOPE=(--variants "${trained_variants[@]}") ;;
  atari-checks)
    # The checks of the Atari half (docs/paper-scale.md "Open: Breakout" and "Open: A2C"): A2C at the SB3 zoo's settings
    # on Pong (experiments/studies/atari_checks_a2c_zoo.yaml), PPO on the Nature CNN on Breakout (atari_checks.yaml) and
    # A2C on the Nature CNN on Pong and BeamRider (atari_checks_a2c.yaml); STUDIES narrows them. One run per job, on one core by default, in ../atari-checks; a publish writes
    # docs/atari-results.md again, whose checks section sets these runs beside the atari study's. Carried like Atari's.
    GRID="${GRID:-$(dirname "$REPO")/atari-checks}"
    STUDIES="${STUDIES:-atari_checks,atari_checks_a2c_zoo,atari_checks_a2c}" GROUP_SIZE=1 SB3_REFERENCE=0 CORES="${CORES:-1}" GRID_CONFIG=() STATUS_SCOPE=() RESULTS_PAGE=atari ;;
  rlhf)
    # The RLHF study at its full scale (issue 32: 300 runs of about a minute, ~5.7 core-hours; no checkpoints,
    # a stopped session loses the runs in progress only), on one core beside the Atari grid by default
    GRID="${GRID:-$(dirname "$REPO")/rlhf-grid}"
    STUDIES=rlhf SCALE=full SB3_REFERENCE=0 CORES="${CORES:-1}" GRID_CONFIG=() STATUS_SCOPE=() CHECKPOINTS=0 RESULTS_PAGE=rlhf ;;
  *) echo "paper_grid: GRID_NAME is mujoco (default), atari, atari-checks or rlhf, not ${GRID_NAME}" >&2; exit 1 ;;
esac
# Groups of 11 runs of a task: 1.7-2.6x the steps/s per core of groups of 3 on HalfCheetah, Reacher,
# InvertedPendulum and Swimmer (benchmarks/throughput.py --groups 3 11, 2026-11-24: the batched update
# spreads over more runs), and 10-45 minutes a job on one core. Figure 3's groups are
# 3 seeds of one algorithm whatever the size. ppo.pipeline.remote must plan with the same size to share checkpoints.
GROUP_SIZE="${GROUP_SIZE:-11}"
CORES="${CORES:-$(nproc)}"
LOG="$GRID/grid.log"

die() { echo "paper_grid: $*" >&2; exit 1; }
# The grid runs in its own session (setsid), whose id is the leader's pid, kept in $GRID/grid.pid.
running() { [ -f "$GRID/grid.pid" ] && pgrep -s "$(cat "$GRID/grid.pid")" > /dev/null; }
sb3_running() { [ -f "$GRID/sb3.pid" ] && pgrep -s "$(cat "$GRID/sb3.pid")" > /dev/null; }
SB3_ARGS=(--steps 1000000 --workers 1 --skip-in "$GRID/published/sb3_reference" --out-dir "$GRID/results/sb3_reference")
# setsid: the process outlives the shell that started it (but not the session). A new session is its own
# scheduler autogroup on Linux, which nice alone does not reach: the group's share drops to nice 19 too, so
# that anything else on the machine comes first.
background() {  # background PIDFILE LOGFILE COMMAND...
  local pidfile="$1" logfile="$2"; shift 2
  setsid nohup sh -c 'echo 19 > /proc/self/autogroup 2> /dev/null; exec nice -n 19 "$0" "$@"' "$@" \
    > "$logfile" 2>&1 < /dev/null &
  echo $! > "$pidfile"
}

# The studies this grid publishes: as it trains them (STUDIES), else the MuJoCo dataset's (ppo.pipeline.publish.STUDIES)
published_studies() {
  echo "${STUDIES:-$(cd "$REPO" && .venv/bin/python -c 'from ppo.pipeline.publish import STUDIES; print(" ".join(STUDIES))')}" | tr ',' ' '
}

# Publishing commits the runs it copied. A grid with a results page written from its published records (RESULTS_PAGE:
# scripts/<name>_results.py writes docs/<name>-results.md, and for some a block of README.md) writes it again first,
# and the page goes into the same commit (tests/pipeline/test_rlhf_published.py, test_atari_results.py and
# test_seeds_results.py check the committed files against the records: a stop between two commits would leave them
# apart)
check_pages() {
  # The committed results pages (docs/paper-results, docs/ten-seeds-report) read the MuJoCo studies' published runs:
  # say which one a publish has left behind, and the command that writes it again (its test fails until then)
  # (without .venv the publish before it failed, and said so)
  [ "${GRID_NAME:-mujoco}" = mujoco ] && [ -x "$REPO/.venv/bin/python" ] || return 0
  (cd "$REPO" && .venv/bin/python scripts/results_page.py --check 2>&1) || true
}

publish_and_commit() {
  # One publish at a time across the grids (flock): each copies runs into published/ and commits all of it, so the
  # Atari watch once committed RLHF runs the RLHF watch had copied but not yet committed with their page
  ( flock 9
    # The publishing code runs from this repository's work tree: never half-edited (the watch runs for hours
    # beside a session's editing). Uncommitted changes to what publish reads postpone it to the next round.
    if ! git -C "$REPO" diff --quiet HEAD -- ppo analysis scripts reference experiments workflow/scripts README.md; then
      echo "paper_grid: publish postponed: uncommitted changes to the code it runs or the README it writes (git diff HEAD -- ppo analysis scripts reference experiments workflow/scripts README.md)"
      exit 0
    fi
    if [ -z "${RESULTS_PAGE:-}" ]; then
      cd "$REPO" && .venv/bin/python -m ppo.pipeline.publish "$@" --commit
      exit
    fi
    local page="docs/${RESULTS_PAGE}-results.md" written="written again from them" file
    cd "$REPO" && .venv/bin/python -m ppo.pipeline.publish "$@" || exit
    # A page that cannot be written never holds back the runs: they are committed as they finish, the page and README
    # as they were (its test fails until the page is written again)
    if ! .venv/bin/python "scripts/${RESULTS_PAGE}_results.py"; then
      written="NOT written again: scripts/${RESULTS_PAGE}_results.py failed"
      echo "paper_grid: $page $written; the runs are committed without it" >&2
      for file in "$page" README.md; do
        if git cat-file -e "HEAD:$file" 2> /dev/null; then git checkout -q HEAD -- "$file"; else rm -f "$file"; fi
      done
    fi
    local paths=(published README.md)  # the page too, unless a first one failed: git refuses a path it cannot match
    if [ -e "$page" ] || git cat-file -e "HEAD:$page" 2> /dev/null; then paths+=("$page"); fi
    git add -A -- "${paths[@]}" \
      && { git diff --cached --quiet -- "${paths[@]}" \
           || git commit -q -m "published: $(published_studies | tr " " ",") runs, and $page $written" -- "${paths[@]}"; }
  ) 9> "$REPO/.git/paper_grid.publish.lock"
}

case "${1:-status}" in
  start)
    rev="$(git -C "$REPO" rev-parse "${2:-HEAD}")"
    running && die "already running in $GRID (scripts/paper_grid.sh stop first)"
    # New runs take the code of $rev; carried runs resume under it too. Where the code they last trained with differs
    # in what training reads, say so: the goldens (tests/training/test_golden_records.py) tell whether their numerics
    # changed, and a run's parts record each part's commit
    if [ "${CHECKPOINTS:-1}" != 0 ] \
       && carried="$(cd "$REPO" && .venv/bin/python -m ppo.pipeline.carry revision --studies $(published_studies))" \
       && [ "$carried" != "$rev" ] && git -C "$REPO" cat-file -e "${carried}^{commit}" 2> /dev/null \
       && ! git -C "$REPO" diff --quiet "$carried" "$rev" -- ppo experiments; then
      echo "paper_grid: the carried runs last trained at ${carried:0:10}; ppo/ or experiments/ differ at ${rev:0:10}" \
           "(git diff --stat ${carried:0:10} ${rev:0:10} -- ppo experiments): they resume under ${rev:0:10}"
    fi
    [ -d "$GRID/.git" ] || git clone -q --no-checkout "$REPO" "$GRID"
    git -C "$GRID" fetch -q "$REPO" "$rev"
    # the copies of published runs a start made (below) go first: a later revision that tracks them would refuse to
    # check out over them
    git -C "$GRID" clean -fdq -- published
    git -C "$GRID" checkout -q --detach "$rev"
    # Runs published since $rev (by this grid, another machine or the device) are copied there, never trained again:
    # untracked files, so the clone's code stays clean; existing files are kept
    cp -rn "$REPO/published/." "$GRID/published/"
    "$GRID/repro" setup
    # Unfinished groups' checkpoints that a session committed (on this machine or another): the furthest of each
    (cd "$REPO" && .venv/bin/python -m ppo.pipeline.carry restore --into "$GRID" --studies $(published_studies))
    # A stopped session leaves Snakemake's lock behind; nothing else uses this clone (checked above). The clone's
    # own Snakefile: this repo's may import modules the clone's revision lacks, and then nothing is unlocked.
    (cd "$GRID" && .venv/bin/snakemake --directory "$GRID" --snakefile "$GRID/workflow/Snakefile" --unlock) \
      > "$GRID/unlock.log" 2>&1 || die "unlocking $GRID failed (log: $GRID/unlock.log)"
    grid_cores="$CORES"
    if sb3_running; then  # left running when the grid alone was stopped: it keeps its core
      grid_cores=$((CORES - 1))
      echo "paper_grid: the SB3 reference runs go on (log: $GRID/sb3.log)"
    elif [ "${SB3_REFERENCE:-1}" != 0 ] && [ "$CORES" -ge 2 ]; then
      "$GRID/.venv/bin/pip" install -q -e "$GRID[sb3]" > "$GRID/sb3_install.log" 2>&1 \
        || die "installing stable-baselines3 failed (log: $GRID/sb3_install.log)"
      left="$("$GRID/.venv/bin/python" "$GRID/benchmarks/mujoco_sb3_reference.py" "${SB3_ARGS[@]}" --count)"
      if [ "$left" -gt 0 ]; then
        background "$GRID/sb3.pid" "$GRID/sb3.log" \
          "$GRID/.venv/bin/python" "$GRID/benchmarks/mujoco_sb3_reference.py" "${SB3_ARGS[@]}"
        grid_cores=$((CORES - 1))
        echo "paper_grid: $left SB3 reference runs on one core (log: $GRID/sb3.log)"
      fi
    fi
    # Every run with a checkpoint starts before any new one, the furthest first: the training rule's priority
    # (ppo.pipeline.carry.train_priority). Counted here for the message.
    mapfile -t resumable < <(cd "$REPO" && .venv/bin/python -m ppo.pipeline.carry resumable --from "$GRID" ${RESUMABLE_SCOPE[@]+"${RESUMABLE_SCOPE[@]}"})
    # The studies the dataset publishes (ppo.pipeline.publish.STUDIES: Table 1, Figure 3 and their checks), as the clone has them
    studies="${STUDIES:-$(cd "$GRID" && .venv/bin/python -c 'from ppo.pipeline.publish import STUDIES; print(",".join(STUDIES))')}"
    # A study's new groups before the next one's, in the order STUDIES names them (STUDIES=table1,figure3 SEEDS=10: Table 1's
    # seeds 3-9, then Figure 3's); a clone of a revision before the setting existed trains as it did then
    if grep -q studies_in_order "$GRID/workflow/schemas/config.schema.yaml"; then GRID_CONFIG+=(studies_in_order=True); fi
    echo "$(date -Is) start $rev studies=[$studies] ${GRID_CONFIG[*]} group_size=$GROUP_SIZE cores=$grid_cores" >> "$GRID/grid.history"
    background "$GRID/grid.pid" "$LOG" \
      "$GRID/.venv/bin/snakemake" --directory "$GRID" --snakefile "$GRID/workflow/Snakefile" \
      --cores "$grid_cores" --keep-going --rerun-incomplete --rerun-triggers mtime params input software-env \
      --config "studies=[$studies]" scale="${SCALE:-paper}" group_size="$GROUP_SIZE" ${GRID_CONFIG[@]+"${GRID_CONFIG[@]}"}
    echo "paper_grid: training in $GRID at ${rev:0:10} on $grid_cores cores (log: $LOG)${resumable[0]:+; first, ${#resumable[@]} runs with a checkpoint, the furthest first}"
    ;;
  status)
    if running; then echo "running in $GRID"; else echo "not running"; fi
    if sb3_running; then echo "SB3 reference runs: training (log: $GRID/sb3.log)"; fi
    (cd "$REPO" && .venv/bin/python -m ppo.pipeline.publish --status --studies $(published_studies) "${STATUS_SCOPE[@]}" --group-size "$GROUP_SIZE" --from "$GRID" --sb3 "$GRID/results/sb3_reference" "${@:2}")
    if [ "${CHECKPOINTS:-1}" = 0 ]; then  # RLHF: a run per job, no checkpoints; Snakemake's count of its jobs
      grep -E '^[0-9]+ of [0-9]+ steps' "$LOG" 2> /dev/null | tail -n 1 | sed 's/^/jobs (model builds, runs, report): /' || true
    else  # the groups still training: how far each got (from its last checkpoint) and on which processors
      (cd "$REPO" && .venv/bin/python -m ppo.pipeline.carry unfinished --from "$GRID")
    fi
    ;;
  publish)
    # more sources (an unpacked ppo.pipeline.remote archive): scripts/paper_grid.sh publish --from DIR
    publish_and_commit --studies $(published_studies) --from "$GRID" --sb3 "$GRID/results/sb3_reference" ${SEEDS:+--seeds "$SEEDS"} "${@:2}"
    check_pages
    ;;
  watch)
    # Finished runs are committed as they come, so that none depends on this machine being kept; a
    # publish that finds the repository busy (another git command) is tried again next time.
    # One publish after the grid has stopped, too: the runs that finished after the last one in the loop.
    # CARRY_EVERY=MIN: the unfinished runs' checkpoints are committed (`carry`) every MIN minutes as well, so that a
    # session that ends without its closing carry loses at most MIN minutes per job (each carry adds about 10 MB per
    # Atari run to .git: 60-90 minutes is the trade)
    [[ "${CARRY_EVERY:-0}" =~ ^[0-9]+$ ]] || die "CARRY_EVERY is a whole number of minutes, not ${CARRY_EVERY}"
    last_carry=$SECONDS
    while true; do
      was_running=0; { running || sb3_running; } && was_running=1
      # the whole output read before its first line is shown: a pipe closed early (head -1) could kill the
      # commit that follows the first line
      out="$(publish_and_commit --studies $(published_studies) --from "$GRID" --sb3 "$GRID/results/sb3_reference" \
             ${SEEDS:+--seeds "$SEEDS"} 2>&1)" || true
      echo "${out%%$'\n'*}"
      check_pages
      if [ -n "${CARRY_EVERY:-}" ] && [ "$was_running" = 1 ] && (( SECONDS - last_carry >= CARRY_EVERY * 60 )); then
        # under the publishes' lock (it commits too); a carry that finds the repository busy (another git command) is
        # tried again next round
        out="$(flock "$REPO/.git/paper_grid.publish.lock" bash "$REPO/scripts/paper_grid.sh" carry 2>&1)" \
          && last_carry=$SECONDS
        echo "${out%%$'\n'*}"
      fi
      [ "$was_running" = 1 ] || break
      sleep "$(( ${2:-10} * 60 ))"
    done
    ;;
  stop)
    if running || sb3_running; then
      [ "${2:-}" != grid ] && sb3_running && pkill -s "$(cat "$GRID/sb3.pid")"
      running && pkill -s "$(cat "$GRID/grid.pid")"
      for _ in $(seq 60); do running || { [ "${2:-}" != grid ] && sb3_running; } || break; sleep 1; done  # Snakemake cleans up first
    else
      echo "not running"
    fi
    ;;
  carry)
    [ "${CHECKPOINTS:-1}" = 0 ] && { echo "paper_grid: $GRID_NAME runs have no checkpoints: nothing to carry"; exit 0; }
    # the checkpoints of the variants trained now (RESUMABLE_SCOPE): others started elsewhere stay uncommitted
    (cd "$REPO" && .venv/bin/python -m ppo.pipeline.carry save --from "$GRID" --studies $(published_studies) \
      ${RESUMABLE_SCOPE[@]+"${RESUMABLE_SCOPE[@]}"} --commit)
    ;;
  *)
    die "usage: scripts/paper_grid.sh start [REV] | status | publish [--from DIR] | watch [MIN] | stop [grid] | carry"
    ;;
esac
