#!/usr/bin/env bash
# The test suite on one worker and on one worker per core (pytest-xdist, as `./repro test` runs it), one after the
# other in one invocation, so that the ratio of the two wall clocks is taken on the same machine the same hour.
# Usage: benchmarks/test_workers.sh [PYTEST ARGS...]   e.g. benchmarks/test_workers.sh -m "not integration and not slow"
set -uo pipefail
cd "$(dirname "$0")/.."
./repro setup > /dev/null || exit 1
echo "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1), $(nproc) cores, $(date -u +%FT%TZ), pytest ${*:-(whole suite)}"
declare -A seconds
for workers in 0 auto; do
  start=$(date +%s.%N)
  ./repro test -n "$workers" -p no:cacheprovider "$@" > "/tmp/test_workers.$workers.log" 2>&1
  rc=$?
  seconds[$workers]=$(echo "$(date +%s.%N) - $start" | bc)
  printf 'workers %-4s  %7.1f s  exit %d  %s\n' "$workers" "${seconds[$workers]}" "$rc" \
    "$(grep -E '[0-9]+ (passed|failed)' "/tmp/test_workers.$workers.log" | tail -n 1)"
done
printf 'one worker per core takes %.2f of the serial wall clock\n' "$(echo "${seconds[auto]} / ${seconds[0]}" | bc -l)"
