# A practice check of tiles() (0 points): it runs in the notebook's kernel, beside the student's own code.
assert tiles(256_000) == 2 and tiles(1) == 1 and tiles(128_000) == 1  # noqa: F821  (the answer cell's)
print("tiles(): right")
