"""verdict.py: how the tests of tests/install/ say what failed: one FAIL line each, the planted
faults that were not caught, and the last line."""
failures = []


def fail(msg):
    """Records a failure and prints it as one FAIL line (and whatever lines msg carries)."""
    failures.append(msg)
    print("FAIL:", msg, flush=True)


def planted(caught):
    """caught: {a planted fault: whether the check caught it}; each one not caught is a failure."""
    for what, ok in caught.items():
        if not ok:
            fail(f"planted fault not caught: {what}")


def finish(name, summary):
    """The exit status: 1 with '<name>: N failures' after any failure, else 0 with '<name>: summary'."""
    if failures:
        print(f"{name}: {len(failures)} failures")
        return 1
    print(f"{name}: {summary}")
    return 0
