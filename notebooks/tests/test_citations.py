#!/usr/bin/env python3
"""test_citations.py: what the labs cite, a student has.  The student's folder (make_handout.py)
is built in a temporary folder, and every repository path that a notebook source, a lab's check
module or a student handout (docs/labs/lab*.md, background.md) mentions must exist there or in
the installed package (make_handout.package_files(): figures/... among them): docs/labs/...,
figures/..., notebooks/X (shipped as X); paths into the rest of the
repository (docs/model.md, kernels/, src/, include/, reference/, shared/, ...) are refused, as are
markdown links to files not shipped and the words "issue N".  labkit's docstrings and messages
for a broken layout may name the instructor's tools in notebooks/ (run_all.py, make_handout.py).  README.md and instructor.md are
for running the repository and for instructors, and are not scanned (instructor.md is not
shipped).  (unittest; ctest: notebooks_citations)"""
import fnmatch
import pathlib
import re
import shutil
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent
ROOT = HERE.parent
import make_handout   # notebooks/, on PYTHONPATH (ctest sets it)

PATH = re.compile(r"(?<![\w/.-])((?:docs|kernels|sim|src|include|reference|shared|bench|cli|tests|fuzz|figures|notebooks)"
                  r"/[\w./*{}-]*[\w*}])")
LINK = re.compile(r"\]\(([^)#\s]+)")
ISSUE = re.compile(r"\bissue\s+#?\d", re.I)
SECTION = re.compile(r'background\.md`?,\s+"([^"]+)"')
FILE = re.compile(r"(?<![\w.-])([\w./-]*\w\.(md|h|c|cu|cuh))\b")


def student_texts():
    files = sorted((HERE / "src").glob("lab*.py")) + sorted((make_handout.PACKAGE / "labkit").glob("*.py"))
    files += sorted((ROOT / "docs" / "labs").glob("lab*.md")) + [ROOT / "docs" / "labs" / "background.md"]
    return files


class Citations(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = pathlib.Path(tempfile.mkdtemp(prefix="fl_cite_"))
        cls.dest = make_handout.make(cls.tmp / "handout")
        cls.package = make_handout.package_files()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def shipped(self, path):
        """True when the cited path exists in the student's folder or the installed package
        (globs allowed)."""
        p = path[len("notebooks/"):] if path.startswith("notebooks/") else path
        p = re.sub(r"\{[^}]*\}", "*", p).rstrip(".")
        if "*" in p:
            return any(self.dest.glob(p)) or any(fnmatch.fnmatch(k, p) for k in self.package)
        return (self.dest / p).exists() or p in self.package or any(k.startswith(p + "/") for k in self.package)

    def test_paths_are_shipped(self):
        bad = []
        for f in student_texts():
            # labkit's docstrings and its broken-layout messages may name the instructor's tools
            tools = f.parent.name == "labkit"
            for n, line in enumerate(f.read_text().splitlines(), 1):
                for m in PATH.finditer(line):
                    if tools and m.group(1).startswith("notebooks/") and (ROOT / m.group(1)).exists():
                        continue
                    if not self.shipped(m.group(1)):
                        bad.append(f"{f.relative_to(ROOT)}:{n}: {m.group(1)}")
        self.assertEqual(bad, [], "cited but not in the student's folder or the package:\n" + "\n".join(bad))

    def test_no_source_files_or_other_documents(self):
        """A bare name (masks.h, NOTES.md) is a citation too: only the shipped handouts pass."""
        bad = []
        for f in student_texts():
            for n, line in enumerate(f.read_text().splitlines(), 1):
                for m in FILE.finditer(line):
                    name = m.group(1).split("/")[-1]
                    if m.group(2) != "md" or not (self.dest / "docs" / "labs" / name).exists():
                        bad.append(f"{f.relative_to(ROOT)}:{n}: {m.group(1)}")
        self.assertEqual(bad, [])

    def test_markdown_links_resolve(self):
        bad = []
        for f in sorted((ROOT / "docs" / "labs").glob("*.md")):
            if f.name in make_handout.INSTRUCTOR_ONLY:
                continue
            for target in LINK.findall(f.read_text()):
                if re.match(r"[a-z]+:", target):
                    continue
                shipped = (self.dest / "docs" / "labs" / target).resolve()
                if not shipped.exists() and not (f.name == "README.md" and target in make_handout.INSTRUCTOR_ONLY):
                    bad.append(f"{f.name}: {target}")
        self.assertEqual(bad, [])

    def test_background_sections_exist(self):
        """A section named after background.md ("Masks and heads") is one of its headings."""
        heads = [l[3:].strip() for l in (ROOT / "docs" / "labs" / "background.md").read_text().splitlines()
                 if l.startswith("## ")]
        bad = []
        for f in student_texts() + [ROOT / "docs" / "labs" / "README.md"]:
            text = " ".join(l.lstrip("# ") for l in f.read_text().splitlines())
            for name in SECTION.findall(text):
                if not any(h.startswith(name.rstrip(". ")) for h in heads):
                    bad.append(f"{f.relative_to(ROOT)}: \"{name}\"")
        self.assertEqual(bad, [], f"sections of background.md are {heads}")

    def test_instructor_guide_not_shipped(self):
        self.assertTrue((self.dest / "docs" / "labs" / "background.md").exists())
        self.assertFalse((self.dest / "docs" / "labs" / "instructor.md").exists())
        self.assertFalse(list(self.dest.glob("*solution*")))

    def test_no_issue_numbers(self):
        files = student_texts() + sorted((ROOT / "docs" / "labs").glob("*.md")) + sorted(HERE.glob("*.py"))
        files += sorted((HERE / "tests").glob("*")) + sorted((ROOT / "figures").glob("lab*.gp"))
        bad = [f"{f.relative_to(ROOT)}:{n}" for f in files if f.is_file()
               for n, line in enumerate(f.read_text().splitlines(), 1) if ISSUE.search(line)]
        self.assertEqual(bad, [])

    def test_the_pattern_catches(self):
        """The scanner itself: what it must refuse and what it must let through."""
        for s in ("see docs/model.md eq. (C2)", "`kernels/NOTES.md`", "(src/schedules/flash_bwd.c)",
                  "reference/masks.h", "shared/anchors/h200-sdpa.md", "figures/fig_a_traffic_vs_M.png",
                  "figures/data/l2_probe.csv"):
            m = PATH.search(s)
            self.assertTrue(m and not self.shipped(m.group(1)), s)
        for s in ("docs/labs/background.md", "figures/data/gpu_*.csv", "figures/lab5_passes.gp",
                  "notebooks/lab4_masks_heads.ipynb", "figures/style.gp", "`figures/data/gpu_validate_v{7..11}.csv`"):
            m = PATH.search(s)
            self.assertTrue(m and self.shipped(m.group(1)), s)
        self.assertEqual([m.group(1) for m in FILE.finditer("masks.h, NOTES.md, docs/labs/lab2.md")],
                         ["masks.h", "NOTES.md", "docs/labs/lab2.md"])
        self.assertTrue(ISSUE.search("fixed in Iss" + "ue 7"))


if __name__ == "__main__":
    unittest.main()
