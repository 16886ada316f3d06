"""What leaves the grader for people and learning-management systems: the grade table and LMS CSV, the class
report, and Gradescope's autograder bundles."""
