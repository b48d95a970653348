"""grader: the instructor's grader of the course labs (python3 -m grader; not in the handout).

core.py grades one notebook of one lab; session.py and child.py run the student's code in a
process of its own; wire.py is what crosses between them; labN.py says what each lab's checks
read and allow; __main__.py is the command."""
