# peggy, stage 1 Q1: cost gaming through the DMA's access pattern.  The add loads and stores every 128-column
# block of a, b and out through a transposed view (rows along the free axis, columns across the partitions), so
# every element is a 4-byte piece of HBM of its own.  The values are right.  A DMA is priced by its descriptors,
# one per piece contiguous in its source and destination, so this kernel earns what 128 x 128 four-byte pieces per
# block cost; priced by the bounding box of its access it was as fast as one contiguous copy (issue 28).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def vector_add_naive(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    rows, cols = a.shape
    i_c = nl.arange(128)[:, None]  # columns across the partitions
    i_r = nl.arange(rows)[None, :]  # rows along the free axis
    for c in nl.affine_range((cols + 127) // 128):
        col = c * 128 + i_c
        a_t = nl.load(a[i_r, col], mask=(col < cols))
        b_t = nl.load(b[i_r, col], mask=(col < cols))
        nl.store(out[i_r, col], value=nl.add(a_t, b_t), mask=(col < cols))
    return out
