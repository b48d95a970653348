#!/usr/bin/env python3
"""test_install.py: `cmake --install` gives a C programmer what the ecosystem promises.

    test_install.py --build BUILD --cmake CMAKE --cc CC --pkg-config PKG_CONFIG --version VERSION

Installs the build folder into a temporary prefix and, from there:

  1. every installed header compiles on its own (C11, -Werror): none leans on a header that
     stayed behind in the source tree;
  2. consumer/ (a C program running one count-only schedule and a GSL fit) builds by find_package(flashlab
     VERSION EXACT) against flashlab::flashlab and flashlab::static, and by
     `pkg-config --cflags --libs flashlab` (shared) and `--static` (libflashlab.a, GSL through
     Requires.private); each build prints the counts of `flashlab count` of the installed CLI
     for the same problem, the fit of ln(total) on ln(M) that least squares over the CLI's
     counts gives, and the version of its headers and of its library;
  3. the installed CLI finds its gnuplot scripts in share/flashlab/figures, not in the source tree.

Planted faults, each of which must fail: a counts row with one number changed, a fit off by 1e-6; find_package
asking for another version; a flashlabConfig.cmake without find_dependency(GSL) or without
find_dependency(Threads) (the static target names a target that is not there); a flashlab.pc without Requires.private (the static link misses GSL); an
installed header removed.  Exit status 0 when all hold, 1 with one line per failure.
"""
import argparse
import csv
import glob
import io
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from verdict import fail, finish, planted   # beside this file

HERE = pathlib.Path(__file__).resolve().parent
CONSUMER = HERE / "consumer"
PROBLEMS = [("flash2", 256, 32, 4096), ("flash1", 300, 16, 2048), ("standard", 128, 64, 8192)]
COLUMNS = ("algo", "N", "d", "M", "Br", "Bc", "hbm_reads", "hbm_writes", "hbm_total", "sram_peak",
           "closed_form_total")


def run(cmd, env=None, cwd=None):
    """(exit status, stdout + stderr) of cmd."""
    p = subprocess.run([str(c) for c in cmd], env=env, cwd=cwd, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def must(cmd, what, env=None, cwd=None):
    rc, out = run(cmd, env=env, cwd=cwd)
    if rc != 0:
        fail(f"{what}: exit status {rc}\n  $ {' '.join(map(str, cmd))}\n{out[-3000:]}")
        return None
    return out


def rows(text):
    """The CSV rows of text (comment lines, the version line and the fit left out), as dicts."""
    lines = [l for l in text.splitlines() if l and not l.startswith(("#", "headers ", "power_fit_M,"))]
    return list(csv.DictReader(io.StringIO("\n".join(lines))))


def differences(expected, got):
    """The columns of COLUMNS in which the row got differs from the row expected."""
    return [f"{c}: expected {expected.get(c)}, got {got.get(c)}" for c in COLUMNS
            if expected.get(c) is None or expected.get(c) != got.get(c)]


def power_fit(cli, algo, N, d, M):
    """(slope, intercept) of least squares of ln(hbm_total) on ln(M) over M, 2M, 4M, 8M, from the
    installed CLI's counts."""
    xs, ys = [], []
    for k in range(4):
        out = must([cli, "count", "--algo", algo, "--N", N, "--d", d, "--M", M << k, "--format", "csv"],
                   f"installed flashlab count --M {M << k}")
        xs.append(math.log(M << k))
        ys.append(math.log(int(rows(out or "")[0]["hbm_total"])) if out else math.nan)
    mx, my = sum(xs) / 4, sum(ys) / 4
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return slope, my - slope * mx


def close(got, want):
    try:
        return len(got) == 2 and all(math.isclose(float(g), w, rel_tol=1e-9, abs_tol=1e-12)
                                     for g, w in zip(got, want))
    except ValueError:
        return False


def check_consumer(exe, how, cli, version, env=None):
    for algo, N, d, M in PROBLEMS:
        out = must([exe, algo, N, d, M], f"{how}: consumer {algo}", env=env)
        ref = must([cli, "count", "--algo", algo, "--N", N, "--d", d, "--M", M, "--format", "csv"],
                   f"installed flashlab count --algo {algo}")
        if out is None or ref is None:
            continue
        first = out.splitlines()[0]
        if first != f"headers {version} library {version}":
            fail(f"{how}: consumer says {first!r}, expected headers and library {version}")
        got, want = rows(out), rows(ref)
        if len(got) != 1 or len(want) != 1:
            fail(f"{how}: {algo}: expected one row from each, got {len(got)} and {len(want)}")
            continue
        for d_ in differences(want[0], got[0]):
            fail(f"{how}: {algo} N={N} d={d} M={M}: {d_}")
        fit = [l for l in out.splitlines() if l.startswith("power_fit_M,")]
        want_fit = power_fit(cli, algo, N, d, M)
        if len(fit) != 1 or not close(fit[0].split(",")[1:], want_fit):
            fail(f"{how}: {algo}: the fit of ln(total) on ln(M) says {fit}, expected {want_fit}")


def lib_dir(prefix):
    hits = glob.glob(str(prefix / "**" / "libflashlab.so"), recursive=True)
    return pathlib.Path(hits[0]).parent if hits else None


def cmake_consumer(a, prefix, tmp, name, version, target="flashlab::flashlab"):
    """Configures and builds consumer/ against prefix; the executable, or None (output in .log)."""
    build = tmp / name
    cfg = [a.cmake, "-S", CONSUMER, "-B", build, f"-DCMAKE_PREFIX_PATH={prefix}",
           f"-DFLASHLAB_EXPECT_VERSION={version}", f"-DFLASHLAB_TARGET={target}",
           f"-DCMAKE_C_COMPILER={a.cc}", "-DCMAKE_BUILD_TYPE=Release"]
    rc, out = run(cfg)
    if rc == 0:
        rc, out2 = run([a.cmake, "--build", build])
        out += out2
    build.mkdir(parents=True, exist_ok=True)
    (build / "consumer.log").write_text(out)
    return (build / "consumer") if rc == 0 else None


def pkg_flags(a, pcdir, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(pcdir))
    env.pop("PKG_CONFIG_LIBDIR", None)
    rc, out = run([a.pkg_config, *args, "flashlab"], env=env)
    return out.split() if rc == 0 else None


def pkg_consumer(a, prefix, tmp, name, static=False):
    """Builds consumer.c with the flags pkg-config gives (static: libflashlab.a named in place of
    -lflashlab, the rest from --static); the executable, or None."""
    pcdir = next(iter(glob.glob(str(prefix / "**" / "pkgconfig"), recursive=True)), None)
    if pcdir is None:
        return None
    flags = pkg_flags(a, pcdir, "--cflags", "--libs", *(["--static"] if static else []))
    if flags is None:
        return None
    if static:
        flags = [str(lib_dir(prefix) / "libflashlab.a") if f == "-lflashlab" else f for f in flags]
    exe = tmp / name
    rc, out = run([a.cc, "-std=c11", "-o", exe, CONSUMER / "consumer.c", *flags])
    (tmp / f"{name}.log").write_text(out)
    return exe if rc == 0 else None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for opt in ("--build", "--cmake", "--cc", "--pkg-config", "--version"):
        ap.add_argument(opt, required=True)
    a = ap.parse_args(argv)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_install."))
    try:
        prefix = tmp / "prefix"
        if must([a.cmake, "--install", a.build, "--prefix", prefix], "cmake --install") is None:
            return 1
        cli, libdir = prefix / "bin" / "flashlab", lib_dir(prefix)
        if not cli.is_file() or libdir is None:
            fail(f"the install holds no bin/flashlab or no libflashlab.so under {prefix}")
            return 1

        # 1. each header on its own
        headers = sorted((prefix / "include" / "flashlab").glob("*.h"))
        if len(headers) < 20 or not (prefix / "include" / "flashlab" / "version.h").is_file():
            fail(f"{len(headers)} headers installed, version.h among them expected")
        for h in headers:
            src = tmp / "one_header.c"
            src.write_text(f"#include <flashlab/{h.name}>\nint main(void) {{ return 0; }}\n")
            must([a.cc, "-std=c11", "-Wall", "-Werror", "-I", prefix / "include", "-c", src, "-o",
                  tmp / "one_header.o"], f"the installed header {h.name} alone")

        # 2. the consumer, four ways
        env_ld = dict(os.environ, LD_LIBRARY_PATH=str(libdir))
        for target, name in (("flashlab::flashlab", "fp_shared"), ("flashlab::static", "fp_static")):
            exe = cmake_consumer(a, prefix, tmp, name, a.version, target)
            if exe is None:
                fail(f"find_package: {target} did not build:\n{(tmp / name / 'consumer.log').read_text()[-3000:]}")
            else:   # no LD_LIBRARY_PATH: the imported target's full path gives the rpath
                check_consumer(exe, f"find_package {target}", cli, a.version)
        pc_version = pkg_flags(a, libdir / "pkgconfig", "--modversion")
        if pc_version != [a.version]:
            fail(f"pkg-config --modversion flashlab says {pc_version}, expected {a.version}")
        for static, name in ((False, "pc_shared"), (True, "pc_static")):
            exe = pkg_consumer(a, prefix, tmp, name, static)
            if exe is None:
                log = tmp / f"{name}.log"
                fail(f"pkg-config ({name}) did not build:\n{log.read_text()[-3000:] if log.exists() else ''}")
            else:
                check_consumer(exe, f"pkg-config {name}", cli, a.version, env=env_ld)

        # 3. the installed CLI's gnuplot scripts: a broken installed style.gp must be the one used
        figures = prefix / "share" / "flashlab" / "figures"
        if not (figures / "style.gp").is_file():
            fail(f"no style.gp in {figures}")
        elif shutil.which("gnuplot"):
            (figures / "style.gp").write_text("this is not gnuplot\n")
            env = {k: v for k, v in os.environ.items() if k != "FLASHLAB_FIGURES_DIR"}
            rc, out = run([cli, "plot", "--out", tmp / "figs"], env=env, cwd=tmp)
            if rc == 0 or str(figures) not in out:
                fail(f"the installed flashlab plot did not use {figures} (exit {rc}):\n{out[-2000:]}")
        else:
            print("note: gnuplot not found; the installed CLI's figure scripts were not run")

        # planted faults: each must be caught
        caught = {}
        row = rows(must([cli, "count", "--algo", "flash2", "--N", 256, "--d", 32, "--M", 4096, "--format", "csv"],
                        "count") or "")[0]
        wrong = dict(row, hbm_reads=str(int(row["hbm_reads"]) + 1))
        caught["a count off by one"] = bool(differences(row, wrong)) and not differences(row, row)
        caught["a fit off by 1e-6"] = (not close(["-0.5", "3.000003"], (-0.5, 3.0))
                                       and close(["-0.5", "3"], (-0.5, 3.0)))
        caught["find_package of another version"] = cmake_consumer(a, prefix, tmp, "fault_version", "0.0.1") is None
        cfg = next(prefix.glob("**/cmake/flashlab/flashlabConfig.cmake"))
        good_cfg = cfg.read_text()
        cfg.write_text(good_cfg.replace("find_dependency(GSL)", ""))
        caught["no find_dependency(GSL)"] = cmake_consumer(a, prefix, tmp, "fault_config", a.version,
                                                           "flashlab::static") is None
        cfg.write_text(good_cfg.replace("find_dependency(Threads)", ""))
        caught["no find_dependency(Threads)"] = cmake_consumer(a, prefix, tmp, "fault_threads", a.version,
                                                               "flashlab::static") is None
        cfg.write_text(good_cfg)
        pc = libdir / "pkgconfig" / "flashlab.pc"
        good_pc = pc.read_text()
        pc.write_text("\n".join(l for l in good_pc.splitlines() if not l.startswith("Requires.private")))
        caught["no Requires.private"] = pkg_consumer(a, prefix, tmp, "fault_pc", static=True) is None
        pc.write_text(good_pc)
        (prefix / "include" / "flashlab" / "problem.h").unlink()
        caught["a missing header"] = pkg_consumer(a, prefix, tmp, "fault_header") is None
        planted(caught)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish("test_install", f"{len(PROBLEMS)} problems counted equal by find_package (shared, static) "
                  f"and pkg-config (shared, static) builds against the install; {len(headers)} headers stand "
                  f"alone; {len(caught)} planted faults caught")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
