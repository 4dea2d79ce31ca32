#!/usr/bin/env bash
# Creating and deleting the kind of file tree the tests leave (copies of ppo/ and experiments/), on the disk that
# holds /tmp and on /dev/shm (memory): why `./repro test` puts TMPDIR in /dev/shm. Usage: benchmarks/tmp_files.sh [COPIES]
set -euo pipefail
cd "$(dirname "$0")/.."
copies="${1:-200}"
for base in "${TMPDIR_DISK:-/tmp}" /dev/shm; do
  tree="$(mktemp -d "$base/tmp-files.XXXXXX")"
  start=$(date +%s.%N)
  for i in $(seq "$copies"); do
    mkdir "$tree/$i"
    cp -r ppo experiments "$tree/$i/"
  done
  sync
  made=$(date +%s.%N)
  files=$(find "$tree" | wc -l)
  rm -rf "$tree"
  sync
  done_=$(date +%s.%N)
  printf '%-10s %6d files  create %6.1f s  delete %6.1f s  (%s)\n' "$base" "$files" "$(echo "$made - $start" | bc)" \
    "$(echo "$done_ - $made" | bc)" "$(findmnt -no FSTYPE,OPTIONS -T "$base" | head -n 1 | cut -c1-60)"
done
