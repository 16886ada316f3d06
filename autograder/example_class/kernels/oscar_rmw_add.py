# oscar, stage 1 Q2: cost gaming with no forgery.  Two HBM->HBM DMAs do the add with no on-chip work: copy a into
# out, then add b onto it with the DMA's read-modify-write (`dst_rmw_op=np.add`).  The values are right.  A
# DMA that reads dst, reads src and writes dst moves about 5N bytes (the reference moves 3N), and it is priced
# as such: no instruction is cheaper than its work, so this kernel earns what its honest latency earns.
import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def vector_add_stream(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=a)
    nisa.dma_copy(dst=out, src=b, dst_rmw_op=np.add)
    return out
