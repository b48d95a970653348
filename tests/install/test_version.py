#!/usr/bin/env python3
"""test_version.py: the version is one number, CMakeLists.txt's project(flashlab VERSION ...).

    test_version.py --version VERSION --build BUILD --cli CLI --lib LIBFLASHLAB --binding-dir DIR

VERSION is CMake's PROJECT_VERSION.  Every place that states a version must state it:
  version.h           FLASHLAB_VERSION and FLASHLAB_VERSION_MAJOR.MINOR.PATCH (generated)
  the CLI             `flashlab --version`, and the provenance line of its CSV files (sweep)
  the binding         flashlab.__version__ (the loaded library's fl_version())
  the shared library  libflashlab.so.VERSION (its file name) in the build folder
  flashlab.pc         Version:
  the CMake package   flashlabConfigVersion.cmake's PACKAGE_VERSION
  the wheel           pyproject.toml's regex applied to CMakeLists.txt (what scikit-build-core reads)
The installed wheel's metadata is checked against the binding by tests/install/test_wheel.py.
Planted faults, which must be caught: one place stating another version; a place stating none.
Exit status 0 when all agree, 1 with one line per disagreement.
"""
import argparse
import os
import pathlib
import re
import subprocess
import sys

from verdict import fail, finish, planted   # beside this file

ROOT = pathlib.Path(__file__).resolve().parents[2]


def first(pattern, text, flags=re.M):
    m = re.search(pattern, text or "", flags)
    return m.group(1) if m else None


def read(path):
    try:
        return pathlib.Path(path).read_text()
    except OSError:
        return None


def out(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    return p.stdout if p.returncode == 0 else None


def wheel_version(pyproject, cmakelists):
    """The version scikit-build-core gives the wheel: [tool.scikit-build.metadata.version]'s regex
    on its input file (CMakeLists.txt)."""
    regex = first(r"^regex\s*=\s*'([^']*)'", pyproject)
    inp = first(r'^input\s*=\s*"([^"]*)"', pyproject)
    if regex is None or inp != "CMakeLists.txt":
        return None
    return first(regex.replace("(?P<value>", "("), cmakelists)


def header_version(text):
    v = first(r'^#define FLASHLAB_VERSION "([^"]*)"', text)
    parts = [first(rf"^#define FLASHLAB_VERSION_{k} (\d+)", text) for k in ("MAJOR", "MINOR", "PATCH")]
    return v if None not in parts and ".".join(parts) == v else f"{v} (but {'.'.join(map(str, parts))})"


def collect(a):
    """{place: the version it states (None: states none)}."""
    build = pathlib.Path(a.build)
    env = dict(os.environ, FLASHLAB_LIB=a.lib, PYTHONPATH=a.binding_dir)
    sweep = out([a.cli, "sweep", "--algo", "flash2", "--N", "256", "--d", "32", "--M", "4096"])
    libs = list((build / "src").glob("libflashlab.so.*.*.*"))
    return {
        "version.h": header_version(read(build / "include" / "flashlab" / "version.h")),
        "flashlab --version": first(r"^flashlab (\S+)$", out([a.cli, "--version"])),
        "the CSV provenance line (sweep)": first(r"\A# flashlab (\S+):", sweep),
        "flashlab.__version__": first(r"^(\S+)$", out([sys.executable, "-c",
                                                        "import flashlab; print(flashlab.__version__)"], env)),
        "libflashlab.so.VERSION": libs[0].name[len("libflashlab.so."):] if len(libs) == 1 else None,
        "flashlab.pc": first(r"^Version:\s*(\S+)$", read(build / "flashlab.pc")),
        "flashlabConfigVersion.cmake": first(r'^set\(PACKAGE_VERSION "([^"]*)"\)',
                                             read(build / "flashlabConfigVersion.cmake")),
        "the wheel (pyproject.toml)": wheel_version(read(ROOT / "pyproject.toml"), read(ROOT / "CMakeLists.txt")),
    }


def disagreements(version, places):
    return [f"{place} says {v!r}, CMake's project VERSION is {version!r}"
            for place, v in places.items() if v != version]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for opt in ("--version", "--build", "--cli", "--lib", "--binding-dir"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args(argv)
    places = collect(a)
    for line in disagreements(a.version, places):
        fail(line)
    faults = {
        "another version": disagreements(a.version, dict(places, **{"flashlab.pc": a.version + ".1"})),
        "no version": disagreements(a.version, dict(places, **{"version.h": None})),
        "a header whose parts disagree": header_version(
            f'#define FLASHLAB_VERSION "{a.version}"\n#define FLASHLAB_VERSION_MAJOR 9\n'
            "#define FLASHLAB_VERSION_MINOR 0\n#define FLASHLAB_VERSION_PATCH 0\n") != a.version,
    }
    planted(faults)
    return finish("test_version", f"{len(places)} places say {a.version}: {', '.join(places)}; "
                  f"{len(faults)} planted faults caught")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
