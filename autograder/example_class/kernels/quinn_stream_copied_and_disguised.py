# quinn, stage 1 Q2: ben's kernel (kernels/ben_stream_one_chunk_at_a_time.py) copied and disguised: every name
# changed, the two tile allocations and the two loads swapped (each pair touches no common tensor), comments
# added. The same program as ben's, so the same grade (half the speed points); the class report's top pair.
import nki
import nki.isa as nisa
import nki.language as nl


@nki.jit
def vector_add_stream(a, b):
    # split the long free dimension into pieces of 2048 columns
    n_part, n_free = a.shape
    width = 2048
    # the right-hand buffer first, then the left-hand one
    rhs_buf = nl.ndarray((n_part, width), dtype=b.dtype, buffer=nl.sbuf)
    lhs_buf = nl.ndarray((n_part, width), dtype=a.dtype, buffer=nl.sbuf)
    result = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for piece in range(n_free // width):
        lo, hi = piece * width, (piece + 1) * width
        nisa.dma_copy(dst=rhs_buf, src=b[:, lo:hi])  # bring in b's piece
        nisa.dma_copy(dst=lhs_buf, src=a[:, lo:hi])  # then a's
        total = nl.add(lhs_buf, rhs_buf)
        nl.store(result[:, lo:hi], value=total)  # write this piece back
    return result
