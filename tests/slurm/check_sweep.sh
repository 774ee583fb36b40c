#!/usr/bin/env bash
# A study sweep on a real one-node Slurm cluster (runtime/study/slurm.h).
#
# usage: check_sweep.sh POSC WORK_DIR
#
# Brings up munged, slurmctld and slurmd on this machine, as root, with every
# file under WORK_DIR and ports no other service uses; submits a 4-run sweep
# (rope2d_decay and its warm start rope2d_decay_sink, small preset, 30 steps,
# over train.lr=1e-3,3e-3) with `posc study --slurm --wait`; checks that the
# warm starts ran one wave after their sources and started from their
# weights, that every results folder is complete and the comparison table
# has the 4 rows; then that submitting again submits nothing; and stops the
# cluster. Exits 77 (skipped) where it cannot run: not root, Slurm or munge
# not installed (Debian: slurm-wlm munge), or the cluster does not start.
set -uo pipefail
POSC=$(readlink -f "$1")
WORK=$2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

skip() { echo "skipped: $*"; exit 77; }
[ "$(id -u)" = 0 ] || skip "the cluster's daemons run as root here (run the test as root)"
for p in munged slurmctld slurmd sbatch squeue; do
  command -v "$p" >/dev/null || skip "$p not found (Debian: slurm-wlm munge)"
done

rm -rf "$WORK"
mkdir -p "$WORK"/{state,spool,log,run}
chmod 700 "$WORK"
WORK=$(readlink -f "$WORK")
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HOST=$(hostname -s)
CTLD_PORT=$(port); SLURMD_PORT=$(port)
while [ "$SLURMD_PORT" = "$CTLD_PORT" ]; do SLURMD_PORT=$(port); done

dd if=/dev/urandom of="$WORK/munge.key" bs=1024 count=1 status=none
chmod 400 "$WORK/munge.key"
cat > "$WORK/slurm.conf" <<CONF
ClusterName=posc-test
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$WORK/munge.sock
CredType=cred/munge
StateSaveLocation=$WORK/state
SlurmdSpoolDir=$WORK/spool
SlurmctldPidFile=$WORK/run/slurmctld.pid
SlurmdPidFile=$WORK/run/slurmd.pid
SlurmctldLogFile=$WORK/log/slurmctld.log
SlurmdLogFile=$WORK/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SchedulerType=sched/backfill
ReturnToService=2
SlurmUser=root
MpiDefault=none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) / 2 )) State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$WORK/slurm.conf

stop_cluster() {
  for f in slurmd slurmctld; do
    [ -f "$WORK/run/$f.pid" ] && kill "$(cat "$WORK/run/$f.pid")" 2>/dev/null
  done
  [ -f "$WORK/munge.pid" ] && kill "$(cat "$WORK/munge.pid")" 2>/dev/null
  sleep 1
}
trap stop_cluster EXIT

munged --force --socket="$WORK/munge.sock" --pid-file="$WORK/munge.pid" --log-file="$WORK/munge.log" \
  --key-file="$WORK/munge.key" --seed-file="$WORK/munge.seed" || skip "munged does not start ($(tail -1 "$WORK/munge.log" 2>/dev/null))"
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start"
slurmd -f "$SLURM_CONF" -N "$HOST" || skip "slurmd does not start"
for _ in $(seq 1 60); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
  skip "the node did not come up: $(tail -3 "$WORK/log/slurmctld.log" "$WORK/log/slurmd.log" 2>/dev/null | tr '\n' ' ')"
echo "cluster up: $(sinfo -h -o '%P %a %D %T %N')"

failures=0
check() {
  if eval "$2"; then echo "ok    $1"; else echo "FAIL  $1"; failures=$((failures + 1)); fi
}

STUDY=(study "$ROOT/examples/addition/rope2d_decay.pos" "$ROOT/examples/addition/rope2d_decay_sink.pos"
       --preset small --seeds 0 --set train.steps=30 --set train.lr=1e-3,3e-3 --out "$WORK/study")
cd "$WORK"
timeout 600 "$POSC" "${STUDY[@]}" --slurm --wait > submit.out 2>&1
code=$?
cat submit.out
check "posc study --slurm --wait exits 0 (got $code)" '[ $code = 0 ]'
check "two waves: the warm starts after their sources" \
  'grep -q "submitted wave 0: array job [0-9]* (2 runs)" submit.out && grep -q "submitted wave 1: array job [0-9]* (2 runs), after" submit.out'
for lr in 1e-3 3e-3; do
  for v in rope2d_decay-small rope2d_decay_sink-small; do
    d="$WORK/study/train.lr=$lr/seed0/$v"
    check "$v lr $lr: job.json done" "grep -q '\"status\":\"done\"' '$d/job.json'"
    check "$v lr $lr: final weights and accuracy" "[ -s '$d/seed0/final.pt' ] && [ -s '$d/accuracy.csv' ]"
    decimal=$([ "$lr" = 1e-3 ] && echo 0.001 || echo 0.003)
    check "$v lr $lr: trained at lr $lr" "grep -q 'adamw lr $decimal ' '$d/plan.txt'"
  done
  check "the sink run at lr $lr starts from the decay run's weights" \
    "grep -q 'warm start from $WORK/study/train.lr=$lr/seed0/rope2d_decay-small/seed0/final.pt' '$WORK/study/train.lr=$lr/seed0/rope2d_decay_sink-small/run.log'"
done
check "the comparison table has the 4 rows" \
  '[ "$(cut -d, -f1 "$WORK/study/comparison.csv" | tail -n +2 | sort -u | wc -l)" = 4 ] && grep -q "rope2d_decay_sink-small \[train.lr=3e-3\]" "$WORK/study/comparison.csv"'
echo "--- comparison.md"
cat "$WORK/study/comparison.md"
"$POSC" "${STUDY[@]}" --slurm > again.out 2>&1
check "submitting again submits nothing: $(head -1 again.out)" 'grep -q "nothing to submit" again.out'
check "no new array was submitted" '[ "$(cut -f1 "$WORK/study/slurm/submitted.tsv" | sort -u | wc -l)" = 2 ]'

echo "$failures failure(s)"
[ "$failures" = 0 ]
