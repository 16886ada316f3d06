"""One kernel judged against one question: the static screen (``gate``), the evaluation that runs it on every case
and decides each verdict (``evaluate``), the plain-word diagnosis (``compare``), the typed grade record (``results``),
and the two callers: ``grade`` (nbgrader's grade cells) and ``check`` (the student's self-check)."""
