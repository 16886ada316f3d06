"""In-house kernels written the way the official NKI tutorials and CS149 write them.

They run unmodified on the simulator; tests/test_tutorial_kernels.py checks them against NumPy and
torch over several shapes, including ragged ones.
"""
