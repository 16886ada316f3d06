"""A hand-in as it arrives: every file looked at before nbgrader reads it (``handins``), and the notebook rebuilt on
the released one with only the student's answers in it (``sanitize``)."""
