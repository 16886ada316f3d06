# dev, stage 5 Q1: every instance adds rows [0, R/n) -- it forgot to offset its block by nl.program_id(0).
# The first block is right, the other three are never written: wrong on every case (0 correctness points).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_spmd(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows_per_instance = a.shape[0] // nl.num_programs(0)
    for t in nl.affine_range(rows_per_instance // 128):
        r0 = t * 128
        a_tile = nl.load(a[r0:r0 + 128, :])
        b_tile = nl.load(b[r0:r0 + 128, :])
        nl.store(out[r0:r0 + 128, :], value=nl.add(a_tile, b_tile))
    return out
