"""One module per course stage, each defining ``QUESTIONS`` (collected by ``nkilab.course.questions``).

Module names sort in stage order: ``s01_vector_add``, ``s02_...``.
"""
