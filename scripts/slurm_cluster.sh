#!/usr/bin/env bash
# A real single-node SLURM cluster on this machine, with job accounting, for tests/workflow/test_slurm.py and for
# trying profiles/slurm without a cluster:
#
#   scripts/slurm_cluster.sh install   # Debian packages: munge slurmctld slurmd slurm-client slurmdbd mariadb-server
#   scripts/slurm_cluster.sh start     # start munged, mariadbd, slurmdbd, slurmctld, slurmd; prints SLURM_CONF
#   eval "$(scripts/slurm_cluster.sh env)"   # point sbatch/squeue/sacct/snakemake at it
#   scripts/slurm_cluster.sh status
#   scripts/slurm_cluster.sh stop      # cancel its jobs, stop exactly the daemons that `start` started
#
# Everything lives in $SLURM_CLUSTER_DIR (default: .slurm/ in the repository, git-ignored): generated
# slurm.conf and slurmdbd.conf, a private munge key and socket, the database, state, logs and the PIDs of
# the daemons started. Outside it, only /etc/slurm/slurm.conf is made a symlink to the generated file
# while the cluster runs (start refuses if that file exists and is not such a link); /etc/munge and the
# packages' services are not used. Ports are picked free at start. Daemons run as root (the script re-runs
# itself with `sudo -n` when not root), started by hand: no systemd needed. munged wants every user able to
# reach its socket, so $SLURM_CLUSTER_DIR's parent directories must be world-executable (pytest's tmp_path
# is not). Accounting (slurmdbd + MariaDB) makes sacct, sacctmgr and `scancel --clusters` work, as on a
# production cluster.
set -euo pipefail
PATH="$PATH:/usr/sbin:/sbin"   # the daemons and mungekey live there; a non-root PATH may lack it
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="${SLURM_CLUSTER_DIR:-$REPO/.slurm}"
[[ "$DIR" == /* ]] || DIR="$PWD/$DIR"
CONF="$DIR/etc/slurm.conf"
# Also linked from the default location: the executor's job steps call srun with SLURM_CONF removed from
# their environment (snakemake-executor-plugin-slurm-jobstep 0.6), so srun must find the file there.
SYSTEM_CONF=/etc/slurm/slurm.conf
PIDS="$DIR/run/pids"            # "<name> <pid>" per daemon started by `start`
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
BINARIES=(munged mungekey slurmctld slurmd slurmdbd sbatch squeue sacct sacctmgr scontrol sinfo mariadbd mariadb-install-db mariadb)
CLUSTER=ppo-local
PARTITION=local

die() { echo "slurm_cluster: $*" >&2; exit 1; }
log() { echo "slurm_cluster: $*" >&2; }

as_root() {  # re-run this script as root when needed
  if [ "$(id -u)" != 0 ]; then
    command -v sudo > /dev/null || die "must run as root (no sudo)"
    exec sudo -n env SLURM_CLUSTER_DIR="$DIR" SLURM_CLUSTER_WAIT="${SLURM_CLUSTER_WAIT:-0}" "$0" "$@"
  fi
}

missing_binaries() {
  local b missing=()
  for b in "${BINARIES[@]}"; do
    command -v "$b" > /dev/null 2>&1 || missing+=("$b")
  done
  echo "${missing[*]}"
}

cmd_install() {
  [ -z "$(missing_binaries)" ] && return 0
  as_root install
  # The packages would start their stock services (munge, mariadb; slurmctld/slurmd fail without a
  # configuration). They are not used (start runs its own daemons), so starting them is refused during the
  # install with Debian's policy-rc.d, honoured by both invoke-rc.d and deb-systemd-invoke.
  local policy=/usr/sbin/policy-rc.d
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\n# scripts/slurm_cluster.sh install: start no service\nexit 101\n' > "$policy"
    chmod 755 "$policy"
    trap "rm -f $policy" EXIT
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" > /dev/null
  local missing; missing="$(missing_binaries)"
  [ -z "$missing" ] || die "installed ${PACKAGES[*]} but still missing: $missing"
}

pid_alive() { [ -n "$1" ] && kill -0 "$1" 2> /dev/null; }

# The recorded PID is still the daemon we started (not a recycled PID): its executable has that name.
pid_is() {
  local pid=$1 name=$2 exe
  pid_alive "$pid" || return 1
  exe="$(readlink "/proc/$pid/exe" 2> /dev/null || true)"
  [ "${exe##*/}" = "$name" ] || [ "$(cat "/proc/$pid/comm" 2> /dev/null)" = "$name" ]
}

recorded() { [ -f "$PIDS" ] && awk -v n="$1" '$1 == n {print $2}' "$PIDS" | tail -1; }

running_daemons() {  # names of recorded daemons still alive
  local name pid
  [ -f "$PIDS" ] || return 0
  while read -r name pid; do
    pid_is "$pid" "$name" && echo "$name"
  done < "$PIDS"
  return 0
}

# Start "$@" in the background, in its own session, logging to $DIR/log/<name>.out, and record its PID.
launch() {
  local name=$1; shift
  setsid "$@" > "$DIR/log/$name.out" 2>&1 < /dev/null &
  echo "$name $!" >> "$PIDS"
}

wait_for() {  # wait_for <seconds> <what> <command...>: until the command succeeds
  local seconds=$1 what=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" > /dev/null 2>&1; do
    local name pid dead=""
    while read -r name pid; do pid_alive "$pid" || dead="$dead $name"; done < "$PIDS"
    if [ -n "$dead" ] || [ $SECONDS -ge $deadline ]; then
      if [ -n "$dead" ]; then log "exited:$dead"; else log "timed out after ${seconds}s"; fi
      log "while waiting for $what; logs in $DIR/log:"
      tail -n 20 "$DIR"/log/* >&2 || true
      return 1
    fi
    sleep 0.2
  done
}

free_ports() {  # four TCP ports free on 127.0.0.1
  python3 - << 'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
EOF
}

node_line() {  # this machine's node definition, as slurmd measures it (real CPUs, sockets, memory)
  local line
  line="$(slurmd -C | head -1)"
  [[ "$line" == NodeName=* ]] || die "slurmd -C gave no node definition: $line"
  echo "${line%% UpTime=*} NodeAddr=127.0.0.1 State=UNKNOWN"
}

write_configs() {
  local ctld_port=$1 d_port=$2 dbd_port=$3 db_port=$4 host node
  host="$(hostname -s)"
  node="$(node_line)"
  cat > "$CONF" << EOF
# Generated by scripts/slurm_cluster.sh: a single-node cluster with accounting; rewritten at every start.
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/state/slurmctld
SlurmdSpoolDir=$DIR/state/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
# No systemd or cgroup set-up needed:
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
# Finished jobs stay visible to squeue for 10 minutes (profiles/slurm reads job states from squeue).
MinJobAge=600
AccountingStorageType=accounting_storage/slurmdbd
AccountingStoreFlags=job_comment
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
# For slurmdbd connections, this names the munge socket to use (here: the private one).
AccountingStoragePass=$DIR/munge/munge.socket
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
$node
PartitionName=$PARTITION Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
  (umask 077; cat > "$DIR/etc/slurmdbd.conf" << EOF
# Generated by scripts/slurm_cluster.sh.
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$DIR/munge/munge.socket
PidFile=$DIR/run/slurmdbd.pid
LogFile=$DIR/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$db_port
StorageUser=slurm
StorageLoc=slurm_acct_db
EOF
  )
  echo "$db_port" > "$DIR/run/db_port"
}

sql() { mariadb --no-defaults --socket="$DIR/db/mysqld.sock" -u root "$@"; }

cmd_start() {
  local missing; missing="$(missing_binaries)"
  [ -z "$missing" ] || die "not installed: $missing (run: $0 install)"
  as_root start
  local alive; alive="$(running_daemons)"
  [ -z "$alive" ] || die "already running ($(echo $alive)); run: $0 stop"
  local started=$SECONDS
  mkdir -p "$DIR"/{etc,run,log,munge,state/slurmctld,state/slurmd,db}
  chmod 755 "$DIR" "$DIR/munge"   # munged insists that everyone may reach its socket
  claim_system_conf
  : > "$PIDS"
  rm -f "$DIR"/run/*.pid "$DIR"/log/*
  # shellcheck disable=SC2046
  set -- $(free_ports)
  write_configs "$@"
  trap start_failed EXIT

  [ -f "$DIR/munge/munge.key" ] || mungekey --create --keyfile="$DIR/munge/munge.key"
  chmod 600 "$DIR/munge/munge.key"
  launch munged munged --foreground --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/run/munged.pid" --log-file="$DIR/log/munged.log" --seed-file="$DIR/state/munged.seed"
  wait_for 20 munged munge --socket="$DIR/munge/munge.socket" --no-input

  if [ ! -d "$DIR/db/data/mysql" ]; then
    mariadb-install-db --no-defaults --user=root --datadir="$DIR/db/data" --skip-test-db \
      > "$DIR/log/mariadb-install.out" 2>&1 || die "mariadb-install-db failed; see $DIR/log/mariadb-install.out"
  fi
  launch mariadbd mariadbd --no-defaults --user=root --datadir="$DIR/db/data" --socket="$DIR/db/mysqld.sock" \
    --port="$4" --bind-address=127.0.0.1 --pid-file="$DIR/run/mariadbd.pid" --log-error="$DIR/log/mariadb.log" \
    --skip-log-bin --innodb-buffer-pool-size=128M --innodb-lock-wait-timeout=900
  wait_for 60 mariadbd sql -e "SELECT 1"
  sql -e "CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

  export SLURM_CONF="$CONF"   # slurmdbd reads slurmdbd.conf from the same directory
  launch slurmdbd slurmdbd -D
  wait_for 120 slurmdbd sacctmgr -n list cluster
  if ! sacctmgr -n -P list cluster format=cluster | grep -qx "$CLUSTER"; then
    sacctmgr -i -Q add cluster "$CLUSTER" > /dev/null
  fi

  launch slurmctld slurmctld -D -f "$CONF"
  wait_for 60 slurmctld scontrol ping
  launch slurmd slurmd -D -f "$CONF"
  wait_for 60 "the node to be idle" node_idle
  trap - EXIT
  log "up in $((SECONDS - started))s: partition '$PARTITION' on $(sinfo -h -N -o '%N, %c CPUs, %m MB')"
  echo "export SLURM_CONF=$CONF"
}

start_failed() {
  log "start failed; stopping what it started"
  cmd_stop > /dev/null 2>&1 || true
}

# Whether the cluster whose slurm.conf is $1 (made by this script) runs: its recorded slurmctld is alive. Not a
# `scontrol ping`, which can time out under load: the link would then move while that cluster's job steps still
# read it, and their srun would ask this cluster about their jobs ("Invalid job id specified").
conf_cluster_runs() {
  local pids="${1%/etc/slurm.conf}/run/pids" pid
  [ -f "$pids" ] || return 1
  pid="$(awk '$1 == "slurmctld" {print $2}' "$pids" | tail -1)"
  [ -n "$pid" ] && pid_is "$pid" slurmctld
}

claim_system_conf() {
  if [ -L "$SYSTEM_CONF" ]; then
    local target; target="$(readlink "$SYSTEM_CONF")"
    [ "$target" = "$CONF" ] && return 0
    if [[ "$target" != */etc/slurm.conf ]] || { [ -e "$target" ] && ! head -1 "$target" | grep -q slurm_cluster.sh; }; then
      die "$SYSTEM_CONF links to $target, not a cluster of this script; not touching it"
    fi
    # Another cluster of this script (another project copy's tests) holds it: wait up to SLURM_CLUSTER_WAIT seconds
    # (default 0) for it to stop. Two at once would share the job steps' configuration.
    local deadline=$((SECONDS + ${SLURM_CLUSTER_WAIT:-0}))
    while [ -e "$target" ] && conf_cluster_runs "$target"; do
      [ $SECONDS -lt "$deadline" ] || die "$SYSTEM_CONF links to $target, a running cluster; stop it first"
      sleep 5
    done
    log "replacing $SYSTEM_CONF -> $target (that cluster is not running)"
  elif [ -e "$SYSTEM_CONF" ]; then
    die "$SYSTEM_CONF exists (a SLURM installation of this machine); not touching it"
  fi
  mkdir -p "$(dirname "$SYSTEM_CONF")"
  ln -sfn "$CONF" "$SYSTEM_CONF"
}

release_system_conf() {
  if [ -L "$SYSTEM_CONF" ] && [ "$(readlink "$SYSTEM_CONF")" = "$CONF" ]; then rm -f "$SYSTEM_CONF"; fi
}

node_idle() { sinfo -h -o %T | grep -qx idle; }

cmd_stop() {
  if [ ! -f "$PIDS" ]; then
    [ -L "$SYSTEM_CONF" ] && [ "$(readlink "$SYSTEM_CONF")" = "$CONF" ] && as_root stop && release_system_conf
    log "not running (no $PIDS)"
    return 0
  fi
  as_root stop
  export SLURM_CONF="$CONF"
  # This cluster's own jobs first, so that no job step outlives its slurmd.
  if pid_is "$(recorded slurmctld)" slurmctld; then
    local jobs; jobs="$(squeue -h -o %A 2> /dev/null | tr '\n' ' ')"
    if [ -n "${jobs// }" ]; then
      # shellcheck disable=SC2086
      scancel $jobs 2> /dev/null || true
      wait_for 30 "its jobs to end" no_jobs || log "jobs still listed: $(squeue -h -o %A | tr '\n' ' ')"
    fi
  fi
  # In dependency order; each step's daemons together (each takes 1-3 s to shut down).
  terminate slurmd slurmctld
  terminate slurmdbd
  terminate mariadbd munged
  local alive; alive="$(running_daemons)"
  [ -z "$alive" ] || die "still running: $alive"
  release_system_conf
  rm -f "$PIDS"
  log "stopped"
}

terminate() {  # SIGTERM to the named recorded daemons, SIGKILL to those alive 30 s later
  local name pid pids=() deadline=$((SECONDS + 30))
  for name in "$@"; do
    pid="$(recorded "$name")"
    pid_is "$pid" "$name" && kill -TERM "$pid" && pids+=("$pid")
  done
  for pid in "${pids[@]}"; do
    while pid_alive "$pid" && [ $SECONDS -lt $deadline ]; do sleep 0.1; done
    if pid_alive "$pid"; then
      log "$pid ignored SIGTERM; sending SIGKILL"
      kill -KILL "$pid" 2> /dev/null || true
    fi
  done
}

no_jobs() { [ -z "$(squeue -h -o %A 2> /dev/null)" ]; }

cmd_status() {
  local name pid alive=0
  [ -f "$PIDS" ] || { echo "not running (no $PIDS)"; return 1; }
  while read -r name pid; do
    if pid_is "$pid" "$name"; then echo "$name $pid running"; alive=$((alive + 1)); else echo "$name $pid gone"; fi
  done < "$PIDS"
  if [ $alive -eq 5 ]; then
    SLURM_CONF="$CONF" sinfo
    echo "export SLURM_CONF=$CONF"
    return 0
  fi
  return 1
}

case "${1:-}" in
  install) cmd_install ;;
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) echo "export SLURM_CONF=$CONF" ;;
  *) die "usage: $0 install|start|stop|status|env   (state in \$SLURM_CLUSTER_DIR, default $REPO/.slurm)" ;;
esac
