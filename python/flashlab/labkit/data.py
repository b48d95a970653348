"""Recorded GPU measurements (figures/data/gpu_*.csv) for labs 6 and 7: each CSV starts with '#'
provenance lines (commit, GPU, driver, command).  Found through flashlab.data_dir(): figures/data
in the installed package, else the repository's figures/data."""
import csv
import pathlib

import flashlab as fl


def read_measurements(path):
    """(provenance lines, rows as dicts) of a CSV whose first lines are '#' comments; (None, [])
    when the file is not there."""
    path = pathlib.Path(path)
    if not path.exists():
        return None, []
    text = path.read_text()
    prov = [l for l in text.splitlines() if l.startswith("#")]
    return prov, list(csv.DictReader(l for l in text.splitlines() if l and not l.startswith("#")))


_recorded = {}


def recorded():
    """{file name: (provenance, rows)} of every gpu_*.csv in the data folder (read once per
    process; the rows are shared: copy one before changing it)."""
    d = fl.data_dir()
    if d not in _recorded:
        _recorded[d] = {p.name: read_measurements(p) for p in sorted(d.glob("gpu_*.csv"))}
    return _recorded[d]
