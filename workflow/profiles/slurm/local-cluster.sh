#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, to try the profile without a
# real cluster and to let the test suite run the pipeline through SLURM.
#
#   workflow/profiles/slurm/local-cluster.sh start    install if needed, then start
#   workflow/profiles/slurm/local-cluster.sh status   say what runs
#   workflow/profiles/slurm/local-cluster.sh stop     stop what `start` started
#
# It needs root and a Debian-like system: missing packages (slurm-wlm, munge)
# are installed with apt-get. The generated slurm.conf names this host, takes
# its CPUs and memory from the machine, and runs without cgroups and without
# accounting (no slurmdbd), so `sacct` answers nothing: the profile's
# `slurm-status-command: squeue` and `slurm-no-account: true` lines are for
# this cluster. Every step checks before it acts, so `start` twice is one start.
#
# Settings (environment variables):
#   SLURM_CONF                 where slurm.conf goes (default /etc/slurm/slurm.conf);
#                              an existing file is replaced only if this script wrote it
#   LOCAL_CLUSTER_PARTITION    the one partition's name (default: local)
set -euo pipefail

SLURM_CONF=${SLURM_CONF:-/etc/slurm/slurm.conf}
export SLURM_CONF
PARTITION=${LOCAL_CLUSTER_PARTITION:-local}
STATE_DIR=/var/lib/slurm-local
LOG_DIR=/var/log/slurm-local
RUN_DIR=/run/slurm-local
MARKER="# Written by local-cluster.sh"

say() { echo "local-cluster: $*"; }
fail() {
    echo "local-cluster: error: $*" >&2
    exit 1
}

need_root() {
    [[ $(id -u) -eq 0 ]] || fail "needs root (it installs packages and starts system daemons); run it with sudo"
}

install_packages() {
    local missing=()
    command -v munged >/dev/null 2>&1 || missing+=(munge)
    command -v slurmctld >/dev/null 2>&1 || missing+=(slurm-wlm)
    command -v slurmd >/dev/null 2>&1 || missing+=(slurm-wlm)
    if [[ ${#missing[@]} -eq 0 ]]; then
        return
    fi
    command -v apt-get >/dev/null 2>&1 || fail "slurm-wlm and munge are missing and apt-get is not available to install them"
    say "installing ${missing[*]} with apt-get"
    apt-get update -q >/dev/null || fail "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge >/dev/null ||
        fail "apt-get install slurm-wlm munge failed"
}

host_name() { hostname -s; }

write_config() {
    local host cpus memory_mb
    host=$(host_name)
    cpus=$(nproc)
    # Leave a little memory to the system so slurmd does not mark the node invalid.
    memory_mb=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.95 }' /proc/meminfo)
    if [[ -f $SLURM_CONF ]] && ! grep -q "^$MARKER" "$SLURM_CONF"; then
        fail "$SLURM_CONF exists and was not written by this script; move it away or set SLURM_CONF to another path"
    fi
    mkdir -p "$(dirname "$SLURM_CONF")" "$STATE_DIR/ctld" "$STATE_DIR/d" "$LOG_DIR" "$RUN_DIR"
    local new="$SLURM_CONF.new"
    cat >"$new" <<EOF
$MARKER: a single-node cluster on $host.
ClusterName=localcluster
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE_DIR/ctld
SlurmdSpoolDir=$STATE_DIR/d
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
# Finished jobs stay visible to squeue for an hour: without accounting,
# squeue is how the executor plugin learns that a job has ended.
MinJobAge=3600
NodeName=$host CPUs=$cpus RealMemory=$memory_mb State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
    if [[ -f $SLURM_CONF ]] && cmp -s "$new" "$SLURM_CONF"; then
        rm -f "$new"
    else
        mv "$new" "$SLURM_CONF"
        say "wrote $SLURM_CONF (node $host, $cpus CPUs, $memory_mb MB, partition $PARTITION)"
    fi
}

pid_alive() {
    local file=$1
    [[ -f $file ]] && kill -0 "$(cat "$file")" 2>/dev/null
}

munge_pid_file=/run/munge/munged.pid

start_munge() {
    if pid_alive "$munge_pid_file"; then
        return
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    if [[ ! -f /etc/munge/munge.key ]]; then
        say "creating /etc/munge/munge.key"
        dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 400 /etc/munge/munge.key
    fi
    runuser -u munge -- /usr/sbin/munged || fail "munged did not start (see /var/log/munge/munged.log)"
    say "started munged"
}

wait_for() {
    # wait_for SECONDS DESCRIPTION COMMAND...: retry COMMAND once a second.
    local seconds=$1 description=$2
    shift 2
    for ((i = 0; i < seconds; i++)); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 1
    done
    fail "$description after $seconds s (see $LOG_DIR)"
}

node_state() { sinfo -h -n "$(host_name)" -o %T 2>/dev/null | head -n 1; }

node_ready() {
    case $(node_state) in
    idle* | mixed* | allocated* | completing*) return 0 ;;
    *) return 1 ;;
    esac
}

start() {
    need_root
    install_packages
    write_config
    start_munge
    wait_for 10 "munge does not answer" sh -c 'munge -n | unmunge'
    if ! pid_alive "$RUN_DIR/slurmctld.pid"; then
        /usr/sbin/slurmctld || fail "slurmctld did not start (see $LOG_DIR/slurmctld.log)"
        say "started slurmctld"
    fi
    wait_for 30 "slurmctld does not answer" scontrol ping
    if ! pid_alive "$RUN_DIR/slurmd.pid"; then
        /usr/sbin/slurmd || fail "slurmd did not start (see $LOG_DIR/slurmd.log)"
        say "started slurmd"
    fi
    # A node left down or drained by an earlier run is given back.
    case $(node_state) in
    down* | drain* | fail*) scontrol update NodeName="$(host_name)" State=RESUME >/dev/null 2>&1 || true ;;
    esac
    wait_for 30 "node $(host_name) is not ready" node_ready
    say "ready: partition $PARTITION on $(host_name) ($(node_state)); logs in $LOG_DIR"
}

stop() {
    need_root
    local stopped=0
    if pid_alive "$RUN_DIR/slurmctld.pid" || pid_alive "$RUN_DIR/slurmd.pid"; then
        # Stops slurmctld and every slurmd; jobs still running are killed.
        scontrol shutdown >/dev/null 2>&1 || true
        for daemon in slurmctld slurmd; do
            for ((i = 0; i < 30; i++)); do
                pid_alive "$RUN_DIR/$daemon.pid" || break
                sleep 1
            done
            if pid_alive "$RUN_DIR/$daemon.pid"; then
                kill "$(cat "$RUN_DIR/$daemon.pid")"
            fi
        done
        stopped=1
        say "stopped slurmctld and slurmd"
    fi
    if pid_alive "$munge_pid_file"; then
        kill "$(cat "$munge_pid_file")"
        stopped=1
        say "stopped munged"
    fi
    [[ $stopped -eq 1 ]] || say "nothing was running"
}

status() {
    local running=0
    for daemon in munged slurmctld slurmd; do
        local file="$RUN_DIR/$daemon.pid"
        [[ $daemon == munged ]] && file=$munge_pid_file
        if pid_alive "$file"; then
            say "$daemon running (pid $(cat "$file"))"
            running=$((running + 1))
        else
            say "$daemon not running"
        fi
    done
    if [[ $running -eq 3 ]]; then
        sinfo
        squeue
        return 0
    fi
    return 3
}

case ${1:-} in
start) start ;;
stop) stop ;;
status) status ;;
*)
    echo "usage: $0 start|stop|status" >&2
    exit 2
    ;;
esac
