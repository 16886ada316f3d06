# cleo, stage 6 Q1: keeps the running sum in SBUF in the output dtype instead of a float32 PSUM tile. float32 is
# fine; bfloat16 rounds every partial sum and fails the tolerance on the bfloat16 cases (some correctness lost).
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            acc = nl.zeros((128, 512), lhsT.dtype, buffer=nl.sbuf)
            for k in nl.sequential_range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                acc[...] = nl.add(acc, nl.matmul(lhsT_tile, rhs_tile, transpose_x=True), dtype=lhsT.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=acc)
    return result
