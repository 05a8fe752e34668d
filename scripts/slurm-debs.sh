#!/usr/bin/env bash
# Downloads, here, the Debian .deb files a machine without network needs to run scripts/slurm-local.sh: munge,
# slurmctld, slurmd (with slurmstepd), the clients (sbatch, srun, scontrol, squeue, scancel, sinfo), the basic
# plugins (libslurmfull among them) and the shared libraries of theirs that a plain Ubuntu or Debian image may lack.
# Libraries every such image has (libc, libstdc++, zlib, lz4, libgcrypt, PAM, udev) are left out; libdbus is not on
# every image, and the cgroup v2 plugin that slurmd loads links it. On the other
# machine:
#   for deb in .slurm-debs/*.deb; do dpkg -x "$deb" /tmp/slurm-root; done
#   SLURM_ROOT=/tmp/slurm-root scripts/slurm-local.sh up
# slurm-local.sh links into its state folder only the libraries that machine's loader cannot find.
#   scripts/slurm-debs.sh [FOLDER]   (default .slurm-debs, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
folder=${1:-.slurm-debs}
packages=(slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2
          libhwloc15 libnuma1 libjson-c5 libyaml-0-2 liblua5.1-0 libreadline8 libdbus-1-3)
mkdir -p "$folder"
rm -f "$folder"/*.deb
if [ "$(id -u)" = 0 ]; then apt_get="apt-get"; else apt_get="sudo apt-get"; fi
[ -n "$(find /var/lib/apt/lists -maxdepth 1 -name '*_Packages' -print -quit 2>/dev/null)" ] || $apt_get update -qq
# apt-get download writes into the current folder, as the unprivileged _apt user where it can.
(cd "$folder" && apt-get download -qq "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true)
count=$(find "$folder" -name '*.deb' | wc -l)
[ "$count" = "${#packages[@]}" ] || { echo "slurm-debs: $count of ${#packages[@]} packages downloaded" >&2; exit 1; }
echo "$folder: $count .deb files, $(du -sh "$folder" | cut -f1)"
