#!/usr/bin/env bash
# install-deps.sh: installs what flashlab needs on a fresh Debian/Ubuntu machine, skipping what
# is already there.  Run as root (or with sudo available).  Idempotent.
#   C toolchain and CMake; GSL (fits), Criterion (tests), gnuplot (figures);
#   Python packages that execute the course notebooks (nbclient, ipykernel, nbformat).
#   --lab: also JupyterLab and ipywidgets, to open the labs interactively (the step viewer's
#   slider); CI does not need them and the default install leaves them out.
set -euo pipefail
LAB=0
for a in "$@"; do
  case "$a" in
    --lab) LAB=1 ;;
    *) echo "install-deps: unknown option $a (known: --lab)" >&2; exit 2 ;;
  esac
done

pkgs=(build-essential cmake pkg-config libgsl-dev libcriterion-dev gnuplot-nox python3 python3-pip)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "install-deps: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "install-deps: Debian packages already present"
fi

# Notebook runner (course labs).  Uses the python3 on PATH.
if ! python3 -c 'import nbclient, nbformat, ipykernel' 2>/dev/null; then
  echo "install-deps: installing nbclient, nbformat, ipykernel (pip)"
  python3 -m pip install -q nbclient nbformat ipykernel 2>/dev/null ||
    python3 -m pip install -q --break-system-packages nbclient nbformat ipykernel
fi
if [ "$LAB" -eq 1 ] && ! python3 -c 'import jupyterlab, ipywidgets' 2>/dev/null; then
  echo "install-deps: installing jupyterlab, ipywidgets (pip)"
  python3 -m pip install -q jupyterlab ipywidgets 2>/dev/null ||
    python3 -m pip install -q --break-system-packages jupyterlab ipywidgets
fi
echo "install-deps: done"
