"""Where student code runs: the bubblewrap sandbox, the processes and pipes grading starts, the child that imports
and traces a kernel (``_child``), the executor that runs its program (``_execute``), the parent's side of both
(``runner``), and a notebook's Jupyter kernel in the sandbox."""
