# Added by finn: debugging output on stderr, and a cell that fails.
import sys
import warnings

print("finn: about to check my kernel", file=sys.stderr)
warnings.warn("finn: remember to remove this cell", stacklevel=1)
raise RuntimeError("finn: leftover experiment")
