#!/usr/bin/env bash
# A one-node Slurm cluster on this host, for the slurm-executor test (tests/execution/test_slurm.py).
# No systemd: munged, slurmctld and slurmd are started directly, as root, and stopped by
# .ci/slurm-down.sh from their pid files. Idempotent: a running cluster is left as it is.
set -euo pipefail

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
fi

host=$(hostname -s)
conf=/etc/slurm/slurm.conf
mark="# written by repro .ci/slurm-up.sh"
run=/run/repro-slurm
mkdir -p "$run" /etc/slurm /var/log/slurm /var/spool/slurmd /var/spool/slurmctld

if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
    echo "slurm-up: already up: $(sinfo -h -o '%P %N %t')"
    exit 0
fi
if [ -e "$conf" ] && ! head -1 "$conf" | grep -qF "$mark"; then
    echo "slurm-up: $conf exists and was not written by this script; not touching a real cluster" >&2
    exit 1
fi

# munge: a fresh 1 KiB random key, readable by root only (munged runs as root here).
key=/etc/munge/munge.key
if [ "$(stat -c %s:%U:%a "$key" 2>/dev/null)" != "1024:root:400" ]; then
    install -d -m 700 -o root -g root /etc/munge
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    chown root:root "$key"
    chmod 400 "$key"
fi
install -d -m 755 -o root -g root /run/munge /var/lib/munge /var/log/munge
chown -R root:root /var/lib/munge /var/log/munge
munged --force --pid-file="$run/munged.pid"

# The node line as slurmd measures this host (CPUs, sockets, memory).
node=$(slurmd -C | head -1)
cat > "$conf" <<CONF
$mark
ClusterName=repro-ci
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
KillWait=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=$run/slurmctld.pid
SlurmdPidFile=$run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
$node State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF

rm -rf /var/spool/slurmctld/*  # no jobs left over from an earlier cluster
slurmctld -c  # -c: a clean start, no saved state
slurmd

for _ in $(seq 60); do
    if sinfo -h -o %t 2>/dev/null | grep -qx idle; then
        echo "slurm-up: $(sinfo -h -o 'partition %P, node %N, %c CPUs, %t')"
        exit 0
    fi
    sleep 1
done
echo "slurm-up: the node did not become idle within 60 s; sinfo says: $(sinfo 2>&1)" >&2
tail -20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
