#!/usr/bin/env bash
# install-deps.sh: installs what flashlab needs on a fresh Debian/Ubuntu machine, skipping what
# is already there.  Run as root (or with sudo available).  Idempotent.
#   C toolchain and CMake; GSL (fits), Criterion (tests), gnuplot (figures);
#   Python packages that execute the course notebooks (nbclient, ipykernel, nbformat), and those
#   that build and inspect the wheel (scikit-build-core, auditwheel; python3-venv for the fresh
#   virtual environment the wheel is tested in).
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

pkgs=(build-essential cmake pkg-config libgsl-dev libcriterion-dev gnuplot-nox python3 python3-pip python3-venv)
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

# Notebook runner (course labs) and the wheel's build and inspection.  Uses the python3 on PATH.
if ! python3 -c 'import nbclient, nbformat, ipykernel, scikit_build_core, auditwheel' 2>/dev/null; then
  echo "install-deps: installing nbclient, nbformat, ipykernel, scikit-build-core, auditwheel (pip)"
  py=(nbclient nbformat ipykernel scikit-build-core auditwheel)
  python3 -m pip install -q "${py[@]}" 2>/dev/null ||
    python3 -m pip install -q --break-system-packages "${py[@]}"
fi
# --lab: JupyterLab and ipywidgets (8, with its JupyterLab front end, jupyterlab_widgets) for the
# python3 on PATH, the one whose kernel runs the labs.  Where that python3 is Debian's own
# (PEP 668, "externally managed"), pip refuses a plain install and the second command installs
# with --break-system-packages (into /usr/local as root, ~/.local otherwise), as the notebook
# runner above does.  Then it checks what a lab needs: the imports, the server, and the widget
# manager among JupyterLab's extensions.
if [ "$LAB" -eq 1 ]; then
  if ! python3 -c 'import jupyterlab, ipywidgets, jupyterlab_widgets' 2>/dev/null; then
    echo "install-deps: installing jupyterlab, ipywidgets (pip)"
    python3 -m pip install -q jupyterlab ipywidgets 2>/dev/null ||
      python3 -m pip install -q --break-system-packages jupyterlab ipywidgets
  fi
  python3 -c 'import jupyterlab, ipywidgets, jupyterlab_widgets' ||
    { echo "install-deps: jupyterlab or ipywidgets does not import in $(command -v python3)" >&2; exit 1; }
  python3 -m jupyterlab --version >/dev/null ||
    { echo "install-deps: python3 -m jupyterlab does not start" >&2; exit 1; }
  python3 -m jupyter labextension list 2>&1 | grep -q '@jupyter-widgets/jupyterlab-manager' ||
    { echo "install-deps: the JupyterLab widget manager (jupyterlab_widgets) is not enabled" >&2; exit 1; }
  echo "install-deps: JupyterLab $(python3 -m jupyterlab --version), ipywidgets" \
       "$(python3 -c 'import ipywidgets; print(ipywidgets.__version__)') for $(command -v python3)"
  echo "install-deps: open a lab with: python3 -m jupyterlab notebooks/lab1_online_softmax.ipynb" \
       "(as root add --allow-root)"
fi
echo "install-deps: done"
