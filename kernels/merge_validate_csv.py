#!/usr/bin/env python3
"""merge_validate_csv.py: one record from the CSVs of `flashlab-gpu validate` processes run side by
side (kernels/device_run.sh runs one process a version), with every source's provenance kept.

    python3 kernels/merge_validate_csv.py OUT.csv "WHAT" IN.csv...

OUT.csv gets: the '#' lines of the first input (machine, build, model, accuracy rule), a line
saying what was merged (WHAT), one '# source:' line per input (its commit, date and command), the
header and every input's rows, in the order given.  The inputs must have the same header.  The
`ms` column of processes that shared one GPU is not a timing.  Written through a temporary file
and renamed; nothing is written when an input is missing or its header differs.
"""
import os
import sys


def read(path):
    prov, head, rows = [], None, []
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("#"):
            prov.append(line)
        elif head is None:
            head = line
        elif line:
            rows.append(line)
    return prov, head, rows


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    out, what, ins = sys.argv[1], sys.argv[2], sys.argv[3:]
    parts = []
    for p in ins:
        if not os.path.isfile(p):
            print(f"merge_validate_csv: {p}: no such file", file=sys.stderr)
            return 2
        parts.append(read(p))
    if any(h != parts[0][1] for _, h, _ in parts):
        print("merge_validate_csv: the inputs' headers differ", file=sys.stderr)
        return 2
    keep = [l for l in parts[0][0] if not l.startswith(("# commit:", "# date:", "# command:"))]
    lines = keep + [f"# merged: {what}"]
    for p, (prov, _, rows) in zip(ins, parts):
        get = lambda k: next((l.split(":", 1)[1].strip() for l in prov if l.startswith(f"# {k}:")), "?")
        lines.append(f"# source: {os.path.basename(p)} ({len(rows)} rows): commit {get('commit')}, {get('date')}, "
                     f"command: {get('command')}")
    lines.append(parts[0][1])
    for _, _, rows in parts:
        lines += rows
    tmp = out + ".tmp"
    with open(tmp, "w") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(tmp, out)
    print(f"merge_validate_csv: {sum(len(r) for _, _, r in parts)} rows from {len(ins)} files into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
