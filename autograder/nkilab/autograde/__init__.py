"""nbgrader's autograde step, made safe: what happens to each cell of a rebuilt notebook (``cells``), the execute
step with every verdict computed by the grader (``direct_grade``), the preprocessors, and the feedback templates."""
