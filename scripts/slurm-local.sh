#!/usr/bin/env bash
# A real Slurm on this one machine: munged, slurmctld and two slurmd (nodes or0 and or1, one host, one port each:
# Slurm's multiple-slurmd mode, `slurmd -N NAME`), started directly (no systemd), for `openrecipes launch --slurm`'s
# tests and for a single GPU machine. Cgroup-free (proctrack/linuxproc, task/none), so it runs in a container.
#   scripts/slurm-local.sh up     start it (again: a no-op when it already answers); prints the env to source
#   scripts/slurm-local.sh down   stop every daemon it started and remove its state folder
#   scripts/slurm-local.sh env    print the env lines (SLURM_CONF, PATH, LD_LIBRARY_PATH) for the clients
# Settings (environment):
#   SLURM_ROOT        where Slurm and munge are installed: empty for the system's (/usr), or a tree of `dpkg -x`
#                     unpacked .deb files (scripts/slurm-debs.sh downloads them); binaries, plugins and the shared
#                     libraries the machine lacks are taken from it.
#   SLURM_LOCAL_DIR   state folder: config, munge key and socket, spool, daemon logs (default /tmp/openrecipes-slurm-UID)
#   SLURM_LOCAL_PORT  slurmctld's port; the two slurmd take the next two (default 16817)
#   SLURM_LOCAL_NODES 2 (default) or 1
# GPUs: the /dev/nvidiaN devices, split evenly over the nodes, are offered as gres gpu (Slurm 22.05's gpu plugin
# needs the device files; a machine without them offers none, and a job asking --gpus-per-node is refused).
set -euo pipefail
action=${1:-}
root=${SLURM_ROOT:-}
root=${root%/}
state=${SLURM_LOCAL_DIR:-/tmp/openrecipes-slurm-$(id -u)}
port=${SLURM_LOCAL_PORT:-16817}
nodes=${SLURM_LOCAL_NODES:-2}
user=$(id -un)
arch_lib=lib/$(uname -m)-linux-gnu

sbin=$root/usr/sbin
bin=$root/usr/bin
plugins=$root/usr/$arch_lib/slurm-wlm
# Debian installs the daemons as NAME-wlm with /usr/sbin/NAME an alternatives link, which a `dpkg -x` tree lacks.
# They must run under their own name (Slurm tells its daemons apart by it: slurmctld-wlm drops every node's GRES),
# so a tree's get a NAME link in the state folder.
daemon() {
  if [ -x "$sbin/$1" ]; then echo "$sbin/$1"; return; fi
  mkdir -p "$state/sbin"
  ln -sfn "$sbin/$1-wlm" "$state/sbin/$1"
  echo "$state/sbin/$1"
}

env_lines() {
  echo "export SLURM_CONF=$state/slurm.conf"
  [ -z "$root" ] || echo "export PATH=$bin:\$PATH LD_LIBRARY_PATH=$state/lib\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
}

# A SLURM_ROOT tree's libraries, as links in $state/lib: only those this machine's loader cannot find, so the
# LD_LIBRARY_PATH the jobs inherit from sbatch shadows none of the system's own (torch's libstdc++, say).
link_missing_libs() {
  mkdir -p "$state/lib"
  local have lib name
  have=$(ldconfig -p 2>/dev/null | awk '{print $1}')
  for lib in "$root"/usr/"$arch_lib"/*.so* "$root"/"$arch_lib"/*.so* "$plugins"/lib*.so*; do
    [ -e "$lib" ] || continue
    name=$(basename "$lib")
    [[ $name =~ \.so(\.[0-9]+)?$ ]] || continue  # the names the loader asks for: lib.so or its soname lib.so.N
    grep -qxF "$name" <<<"$have" || ln -sfn "$lib" "$state/lib/$name"
  done
}

[ -z "$root" ] || export LD_LIBRARY_PATH=$state/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

gpus_per_node() {
  local count
  count=$(find /dev -maxdepth 1 -regex '/dev/nvidia[0-9]+' 2>/dev/null | wc -l)
  echo $(( count / nodes ))
}

write_config() {
  local gpus=$1 cpus host i first
  cpus=$(nproc)
  host=$(uname -n); host=${host%%.*}
  {
    echo "ClusterName=openrecipes"
    echo "SlurmctldHost=$host(127.0.0.1)"
    echo "SlurmctldPort=$port"
    echo "SlurmUser=$user"
    echo "SlurmdUser=$user"
    echo "AuthType=auth/munge"
    echo "CredType=cred/munge"
    echo "AuthInfo=socket=$state/munge/munge.socket"
    echo "PluginDir=$plugins"
    echo "StateSaveLocation=$state/ctld"
    echo "SlurmctldPidFile=$state/slurmctld.pid"
    echo "SlurmctldLogFile=$state/slurmctld.log"
    echo "SlurmdSpoolDir=$state/spool/%n"
    echo "SlurmdPidFile=$state/slurmd.%n.pid"
    echo "SlurmdLogFile=$state/slurmd.%n.log"
    echo "SlurmdParameters=config_overrides"
    echo "ProctrackType=proctrack/linuxproc"
    echo "TaskPlugin=task/none"
    echo "JobAcctGatherType=jobacct_gather/none"
    echo "AccountingStorageType=accounting_storage/none"
    echo "JobCompType=jobcomp/none"
    echo "MpiDefault=none"
    echo "SwitchType=switch/none"
    echo "SchedulerType=sched/builtin"
    echo "SelectType=select/cons_tres"
    echo "SelectTypeParameters=CR_CPU"
    echo "ReturnToService=2"
    # Finished jobs stay visible to `scontrol show job` for 5 minutes (there is no accounting database).
    echo "MinJobAge=300"
    echo "KillWait=5"
    echo "InactiveLimit=0"
    echo "SlurmctldTimeout=30"
    echo "SlurmdTimeout=30"
    if [ "$gpus" -gt 0 ]; then echo "GresTypes=gpu"; fi
    for (( i = 0; i < nodes; i++ )); do
      echo "NodeName=or$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$(( port + 1 + i )) CPUs=$cpus RealMemory=1000" \
        "State=UNKNOWN$([ "$gpus" -gt 0 ] && echo " Gres=gpu:$gpus")"
    done
    echo "PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
  } > "$state/slurm.conf"
  : > "$state/gres.conf"
  for (( i = 0; i < nodes && gpus > 0; i++ )); do
    first=$(( i * gpus ))
    echo "NodeName=or$i Name=gpu File=/dev/nvidia[$first-$(( first + gpus - 1 ))]" >> "$state/gres.conf"
  done
  # slurmd starts its cgroup plugin even when no job uses cgroups. On a cgroup v2 host (the H200 machines) that plugin
  # would ask systemd over D-Bus for a scope; there is no systemd in a container, so it builds its hierarchy itself.
  # cgroup v1 hosts (this CI) ignore both lines.
  printf 'CgroupAutomount=yes\nIgnoreSystemd=yes\n' > "$state/cgroup.conf"
}

answers() { "$bin/scontrol" ping 2>/dev/null | grep -q "is UP"; }

stop_pid_files() {  # PIDFILE...: TERM the daemons they name, wait for all (KILL what is left after 10 s)
  local file pid pids=()
  for file in "$@"; do
    [ -f "$file" ] || continue
    pid=$(cat "$file")
    if [ -n "$pid" ] && kill "$pid" 2>/dev/null; then pids+=("$pid"); fi
    rm -f "$file"
  done
  [ ${#pids[@]} -gt 0 ] || return 0
  for _ in $(seq 100); do
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && break; pid=; done
    [ -z "${pid:-}" ] && return 0
    sleep 0.1
  done
  kill -9 "${pids[@]}" 2>/dev/null || true
}

down() {
  # Jobs first, so their slurmstepd end with them before the slurmd that started them stops.
  if [ -f "$state/slurm.conf" ] && SLURM_CONF=$state/slurm.conf answers; then
    SLURM_CONF=$state/slurm.conf "$bin/scancel" --full --user "$user" 2>/dev/null || true
    for _ in $(seq 100); do
      [ -z "$(SLURM_CONF=$state/slurm.conf "$bin/squeue" -h -o %i 2>/dev/null)" ] && break; sleep 0.1
    done
  fi
  stop_pid_files "$state"/slurmd.*.pid "$state/slurmctld.pid"
  stop_pid_files "$state/munge/munged.pid"  # after them: they ask munge to the end
  rm -rf "$state"
}

# On a cgroup v2 host without systemd (a container or VM run as root), slurmd's cgroup plugin builds its own hierarchy
# under system.slice (IgnoreSystemd in cgroup.conf): make that folder and let it use the cpu and memory controllers.
prepare_cgroup_v2() {
  [ -f /sys/fs/cgroup/cgroup.controllers ] && [ "$(id -u)" = 0 ] || return 0
  mkdir -p /sys/fs/cgroup/system.slice 2>/dev/null || return 0
  echo "+cpu +memory" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null || true
}

up() {
  for tool in "$sbin/munged" "$(daemon slurmctld)" "$(daemon slurmd)" "$(daemon slurmstepd)" "$bin/sbatch" \
    "$bin/srun" "$bin/scontrol"; do
    [ -x "$tool" ] || { echo "slurm-local: $tool missing; install slurmctld slurmd slurm-client munge" \
      "(scripts/setup.sh test) or set SLURM_ROOT to a tree from scripts/slurm-debs.sh" >&2; exit 2; }
  done
  [ -z "$root" ] || link_missing_libs
  export SLURM_CONF=$state/slurm.conf
  if [ -f "$SLURM_CONF" ] && answers; then env_lines; return 0; fi
  down
  mkdir -p "$state/munge" "$state/ctld" "$state/lib"
  chmod 700 "$state" "$state/munge"
  [ -z "$root" ] || link_missing_libs
  for (( i = 0; i < nodes; i++ )); do mkdir -p "$state/spool/or$i"; done
  write_config "$(gpus_per_node)"
  prepare_cgroup_v2

  head -c 1024 /dev/urandom > "$state/munge/munge.key"
  chmod 400 "$state/munge/munge.key"
  "$sbin/munged" --force --key-file="$state/munge/munge.key" --socket="$state/munge/munge.socket" \
    --pid-file="$state/munge/munged.pid" --log-file="$state/munge/munged.log" --seed-file="$state/munge/munged.seed"

  "$(daemon slurmctld)" -i
  for (( i = 0; i < nodes; i++ )); do
    "$(daemon slurmd)" -N "or$i" -d "$(daemon slurmstepd)"
  done
  for _ in $(seq 150); do
    if answers && [ "$("$bin/sinfo" -h -o %D -t idle 2>/dev/null | awk '{s += $1} END {print s + 0}')" = "$nodes" ]
    then env_lines; return 0; fi
    sleep 0.2
  done
  echo "slurm-local: the nodes did not come up in 30 s; logs in $state (slurmctld.log, slurmd.*.log)" >&2
  tail -n 5 "$state"/*.log >&2 || true
  exit 1
}

case $action in
  up) up ;;
  down) down ;;
  env) env_lines ;;
  *) echo "usage: scripts/slurm-local.sh up|down|env" >&2; exit 2 ;;
esac
