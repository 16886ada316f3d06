# peggy, stage 1 Q2: cost gaming through the DMA's access pattern.  Each 2048-column block of a, b and out moves
# through a view that puts the columns across the partitions (partition p holds columns 16p..16p+15 of every row),
# so every row of every partition is a 64-byte piece of HBM of its own.  The values are right.  A DMA is priced
# by its descriptors, one per piece contiguous in its source and destination, so this kernel earns what 128 x rows
# pieces of 64 bytes per block cost; priced by the bounding box of its access (a contiguous 8 KiB per row) it was
# as fast as the reference's streaming loads (issue 28).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    i_c = nl.arange(128)[:, None, None]  # 16-column groups across the partitions
    i_r = nl.arange(rows)[None, :, None]  # every row along the free axis
    i_k = nl.arange(16)[None, None, :]  # the 16 columns of a group
    for c in nl.affine_range(cols // 2048):
        col = c * 2048 + i_c * 16 + i_k
        a_t = nl.load(a[i_r, col])
        b_t = nl.load(b[i_r, col])
        nl.store(out[i_r, col], value=nl.add(a_t, b_t))
    return out
