"""time_scale.py: the factor by which a test's time limits grow on a loaded machine, for the
Python tests (tests/support/time_limit.c computes the same for the C tests).

Time limits in tests only catch hangs and work done before a refusal; a correct program on a busy
laptop must pass.  So every limit is a generous base times time_scale():

  FLASHLAB_TIME_SCALE   when set: a number in (0, 1000], e.g. 4 on a machine shared with other
                        work (anything else is an error, so a typo is not silently ignored);
  otherwise             the load average of the last minute per online CPU when the test starts,
                        but at least 1 (two CPU-bound processes beside a suite on two cores give
                        about 2).

python3 tests/support/time_scale.py prints the factor in use.
"""
import math
import os

MAX_SCALE = 1000.0


def parse(text):
    """The factor FLASHLAB_TIME_SCALE=text asks for; ValueError naming the rule otherwise."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0 < v <= MAX_SCALE):
        raise ValueError(f"FLASHLAB_TIME_SCALE={text!r}: must be a number in (0, {MAX_SCALE:g}]")
    return v


def from_load(load1, cpus):
    """The factor when FLASHLAB_TIME_SCALE is not set: load per CPU, at least 1."""
    return max(1.0, load1 / max(1, cpus or 1))


def time_scale(environ=None):
    env = os.environ if environ is None else environ
    text = env.get("FLASHLAB_TIME_SCALE")
    if text is not None and text != "":
        return parse(text)
    try:
        load1 = os.getloadavg()[0]
    except OSError:
        load1 = 0.0
    return from_load(load1, os.cpu_count())


if __name__ == "__main__":
    import sys
    try:
        print(f"{time_scale():.3g}")
    except ValueError as e:
        print(e, file=sys.stderr)
        sys.exit(2)
