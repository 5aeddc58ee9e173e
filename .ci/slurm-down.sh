#!/usr/bin/env bash
# Stop what .ci/slurm-up.sh started, by the pids it recorded; wait until each has exited.
set -uo pipefail
run=/run/repro-slurm
for daemon in slurmd slurmctld munged; do
    pidfile="$run/$daemon.pid"
    [ -s "$pidfile" ] || continue
    pid=$(cat "$pidfile")
    if kill "$pid" 2>/dev/null; then
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
        echo "slurm-down: stopped $daemon ($pid)"
    fi
    rm -f "$pidfile"
done
