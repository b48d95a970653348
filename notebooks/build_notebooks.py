#!/usr/bin/env python3
"""build_notebooks.py: builds every lab's two notebooks from its one source, notebooks/src/labN_*.py.

    python3 build_notebooks.py           writes notebooks/labN_*.ipynb (exercises, handed out)
                                         and notebooks/solutions/labN_*_solution.ipynb
    python3 build_notebooks.py --check   fails (exit 1) when a stored notebook has outputs or
                                         differs from what its source builds (ctest: notebooks_clean)

One source per lab keeps the exercise and its solution from drifting apart.  The source is a
Python file in the "percent" format:

    # %% [markdown]              a markdown cell; its lines lose their leading "# "
    # %% [markdown] solution     a markdown cell only in the solution notebook (expected answers)
    # %%                         a code cell
    # %% check                   a code cell tagged "check": it must print CHECK lines (run_all.py)
    # %% setup                   the first code cell: imports, STUDENT and the parameters P
    # %% given                   a code cell the answers need (helpers, the data they read)
    # %% answer                  an exercise's cell (a TODO): the student's version is graded

The grader (notebooks/grader/) runs a submission's setup and given cells as this source has them
and its answer cells as the student wrote them, in this order, on parameters of its own; cells of
no role (demonstrations, figures, checks) do not run there.

and, inside a code cell,

    ### BEGIN STUB ... ### END STUB            lines only in the exercise (the TODO)
    ### BEGIN SOLUTION ... ### END SOLUTION    lines only in the solution

Notebooks are stored without outputs, with stable cell ids, so a rebuild is byte-for-byte the same.
"""
import pathlib
import sys

import nbformat
from nbformat import v4

HERE = pathlib.Path(__file__).resolve().parent
ROLES = ("check", "setup", "given", "answer")   # a code cell's roles, as its tags


def parse_cells(text):
    """[(kind, flags, lines)] from a percent-format source."""
    cells = []
    for line in text.splitlines():
        if line.startswith("# %%"):
            head = line[4:].strip()
            kind = "markdown" if head.startswith("[markdown]") else "code"
            flags = set(head.replace("[markdown]", "").split())
            cells.append((kind, flags, []))
        elif cells:
            cells[-1][2].append(line)
        elif line.strip():
            raise ValueError(f"text before the first cell marker: {line!r}")
    return cells


def select(lines, solution):
    """Keeps the STUB lines (exercise) or the SOLUTION lines (solution)."""
    out, mode = [], None
    for line in lines:
        s = line.strip()
        if s in ("### BEGIN STUB", "### BEGIN SOLUTION"):
            mode = s.split()[-1]
            continue
        if s in ("### END STUB", "### END SOLUTION"):
            mode = None
            continue
        if mode == "STUB" and solution or mode == "SOLUTION" and not solution:
            continue
        out.append(line)
    return out


def strip_blank(lines):
    while lines and not lines[0].strip():
        lines = lines[1:]
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return lines


def build(src, solution):
    nb = v4.new_notebook()
    nb.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                   "language_info": {"name": "python"}}
    stem = src.stem
    for i, (kind, flags, lines) in enumerate(parse_cells(src.read_text())):
        if "solution" in flags and not solution:
            continue
        cid = f"{stem}-{i:02d}"
        if kind == "markdown":
            body = "\n".join(l[2:] if l.startswith("# ") else l.lstrip("#") for l in strip_blank(lines))
            nb.cells.append(v4.new_markdown_cell(body, id=cid))
        else:
            body = "\n".join(strip_blank(select(lines, solution)))
            cell = v4.new_code_cell(body, id=cid)
            tags = [t for t in ROLES if t in flags]
            if tags:
                cell.metadata["tags"] = tags
            nb.cells.append(cell)
    return nbformat.writes(nb) + "\n"


def targets(src):
    return {HERE / f"{src.stem}.ipynb": False, HERE / "solutions" / f"{src.stem}_solution.ipynb": True}


def has_outputs(path):
    nb = nbformat.read(str(path), as_version=4)
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]


def main(argv):
    check = "--check" in argv
    srcs = sorted((HERE / "src").glob("lab*.py"))
    problems, expected = [], set()
    for src in srcs:
        for path, sol in targets(src).items():
            expected.add(path)
            text = build(src, sol)
            if not check:
                path.parent.mkdir(exist_ok=True)
                path.write_text(text)
                print("wrote", path.relative_to(HERE))
            elif not path.exists():
                problems.append(f"{path.relative_to(HERE)}: missing (run python3 notebooks/build_notebooks.py)")
            elif path.read_text() != text:
                problems.append(f"{path.relative_to(HERE)}: differs from {src.relative_to(HERE)} "
                                f"(edit the source, then run python3 notebooks/build_notebooks.py)")
    for path in sorted(HERE.glob("*.ipynb")) + sorted((HERE / "solutions").glob("*.ipynb")):
        cells = has_outputs(path)
        if cells:
            problems.append(f"{path.relative_to(HERE)}: stored with outputs in code cells {cells} "
                            f"(clear them: python3 notebooks/build_notebooks.py)")
        if path not in expected:
            problems.append(f"{path.relative_to(HERE)}: has no source in notebooks/src/")
    for p in problems:
        print("notebooks:", p)
    if check:
        print(f"notebooks: {len(expected)} notebooks from {len(srcs)} sources:",
              "FAIL" if problems else "clean, without outputs, in sync with their sources")
    return 1 if problems or not srcs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
