# Handed in by gus next to his notebook as nkilab.py: if it reached the grading directory, `from nkilab import
# grade` in a grade cell would import this file instead of the course's grader.


def grade(*args, **kwargs):
    return 4.0


def check(*args, **kwargs):
    return None
