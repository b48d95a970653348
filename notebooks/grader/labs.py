"""labs.py: the grading spec of every lab, by number (grader/labN.py)."""
from . import lab1, lab2, lab3, lab4, lab5, lab6, lab7, lab8, lab9, lab10

SPECS = {m.LAB: m for m in (lab1, lab2, lab3, lab4, lab5, lab6, lab7, lab8, lab9, lab10)}
