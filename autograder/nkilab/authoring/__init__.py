"""The lessons made into what people open: students' notebooks and reference kernels (``make release``), a TA's
nbgrader course (``make course``), the student's JupyterLab (``make lab``), and each lesson run once for the site."""
