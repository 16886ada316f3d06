"""nbgrader configuration for the NKI Kernel Lab (`make release`, and the course `make grade` builds).

The grading settings (sanitizer, time limits, feedback without hidden cases) are passed on the
command line by `python -m nkilab.batch.classgrade` (see ``nkilab.autograde.nbgrader_plugins.grading_flags``), so they
also apply to a course whose own nbgrader_config.py predates them.
"""

c = get_config()  # noqa: F821  (provided by nbgrader's config loader)

c.CourseDirectory.course_id = "nki-kernel-lab"

# Never copy generated artefacts into release/: %%writefile kernel modules (a solution leak if the source
# notebook was ever executed in place), profiles, compiler output and caches.
c.CourseDirectory.ignore = [
    ".ipynb_checkpoints", "__pycache__", "*.pyc", "*.py", "*.npy", "*.bin",
    "*.neff", "*.ntff", "*.json", "*.pftrace", "*.html", "profile*", "nkisim-*", "nkilab-*",
    ".nkisim", "log-*", "feedback",
]

# The stub a student sees in place of a solution region.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
