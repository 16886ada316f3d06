"""``make grade``: a whole class graded with nbgrader without stopping, one run at a time per course, a hand-in
nbgrader discarded graded cell by cell, the TAs' gradebook entries audited, and the bundled example class."""
