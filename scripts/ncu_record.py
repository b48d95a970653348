"""ncu_record.py: what the scripts that turn Nsight Compute's raw output into a recorded table
(ncu_speed_table.py, ncu_orders_table.py, ncu_pair_table.py) share: reading one `ncu --csv
--page raw` file, and writing a table with its provenance atomically."""
import csv
import os


def raw_kernels(path):
    """The kernels of an `ncu --csv --page raw` file: one dict (metric name -> value string) per
    profiled launch, in order; ncu's other lines (==PROF==, the program's output) and the units
    line are skipped.  [] when the file holds no table."""
    lines = list(csv.reader(l for l in open(path) if l.startswith('"')))
    return [dict(zip(lines[0], vals)) for vals in lines[2:]] if len(lines) > 2 else []


def write_table(out, comments, fieldnames, rows):
    """Writes rows (dicts over fieldnames; floats as %.6g) to the path out, after one `# ` line per
    comment, through out.tmp renamed over out: a failure leaves out as it was."""
    tmp = f"{out}.tmp"
    with open(tmp, "w", newline="") as fh:
        for c in comments:
            fh.write(f"# {c}\n")
        w = csv.DictWriter(fh, fieldnames=fieldnames, extrasaction="raise")
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{r[k]:.6g}" if isinstance(r[k], float) else r[k]) for k in fieldnames})
    os.replace(tmp, out)
