"""A fused conv2d + max-pool kernel written to the task statement of Stanford CS149's Trainium assignment, part 2
(asst4-trainium): the statement's signature and guarantees, in the ISA style the statement recommends
(``nisa.dma_copy``, ``nisa.nc_matmul``, ``nisa.nc_transpose``, ``nisa.tensor_reduce``).  Written for this course's
tests, not copied: stage 8's tests run it through the course's harness against PyTorch.

The statement: ``X`` is ``[batch, in_channels, height, width]``, ``W`` is ``[out_channels, in_channels, k, k]``,
``bias`` is ``[out_channels]``; stride 1, no padding; ``pool_size`` is 1 (no pooling) or 2 (a 2 x 2 max pool with
stride 2) and divides the conv output; channel counts are multiples of 128; one conv output row fits one PSUM bank;
the filters fit SBUF; images may not (224 x 224 with 256 channels), so input rows are streamed.
"""

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl


@nki.compiler.skip_middle_end_transformations
@nki.jit
def fused_conv2d_maxpool(X, W, bias, pool_size=1):
    batch, c_in, height, width = X.shape
    c_out, c_in_, k, k_ = W.shape
    assert c_in_ == c_in and k_ == k and bias.shape[0] == c_out
    assert c_in % 128 == 0 and c_out % 128 == 0 and pool_size in (1, 2)
    out_h, out_w = height - k + 1, width - k + 1
    assert out_w <= nl.tile_size.gemm_moving_fmax
    pooled_h, pooled_w = out_h // pool_size, out_w // pool_size
    X_out = nl.ndarray((batch, c_out, pooled_h, pooled_w), dtype=X.dtype, buffer=nl.hbm)
    n_in, n_out = c_in // 128, c_out // 128

    # filters: for each block of 128 output channels, every (input-channel block, tap) as a [c_in, c_out] tile
    w_t = nl.ndarray((128, n_in, k * k, c_out), dtype=W.dtype, buffer=nl.sbuf)
    b_sb = nl.ndarray((128, n_out), dtype=nl.float32, buffer=nl.sbuf)
    w_flat = W.reshape((c_out, c_in, k * k))
    for o in nl.affine_range(n_out):
        bias_col = nl.ndarray((128, 1), dtype=bias.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=bias_col, src=bias.reshape((c_out, 1))[o * 128:(o + 1) * 128, :])
        b_sb[:, o:o + 1] = nisa.tensor_copy(bias_col, dtype=nl.float32)
        w_rows = nl.ndarray((128, c_in, k * k), dtype=W.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=w_rows, src=w_flat[o * 128:(o + 1) * 128, :, :])
        for c in nl.affine_range(n_in):
            for t in nl.affine_range(k * k):
                w_t[:, c, t, o * 128:(o + 1) * 128] = nisa.tensor_copy(
                    nisa.nc_transpose(w_rows[:, c * 128:(c + 1) * 128, t]), dtype=W.dtype)

    rows_in = k + pool_size - 1  # the input rows one pooled output row reads
    for b in nl.affine_range(batch):
        for r in nl.affine_range(pooled_h):
            window = nl.ndarray((128, n_in, rows_in, width), dtype=X.dtype, buffer=nl.sbuf)
            for c in nl.affine_range(n_in):
                nisa.dma_copy(dst=window[:, c, :, :],
                              src=X[b, c * 128:(c + 1) * 128, r * pool_size:r * pool_size + rows_in, :])
            for o in nl.affine_range(n_out):
                best = nl.ndarray((128, out_w), dtype=nl.float32, buffer=nl.sbuf)
                for p in range(pool_size):  # the conv rows this pooled row covers
                    acc = nl.zeros((128, out_w), dtype=nl.float32, buffer=nl.psum)
                    for c in nl.affine_range(n_in):
                        for t in nl.affine_range(k * k):
                            acc += nisa.nc_matmul(w_t[:, c, t, o * 128:(o + 1) * 128],
                                                  window[:, c, p + t // k, t % k:t % k + out_w])
                    row = nisa.tensor_scalar(data=acc, op0=nl.add, operand0=b_sb[:, o:o + 1], dtype=nl.float32)
                    if p == 0:
                        best[...] = row
                    else:
                        best[...] = nisa.tensor_tensor(best, row, op=nl.maximum)
                if pool_size == 2:
                    result = nisa.tensor_reduce(nl.max, best.reshape((128, pooled_w, 2)), axis=2, dtype=X.dtype)
                else:
                    result = nisa.tensor_copy(best, dtype=X.dtype)
                nisa.dma_copy(dst=X_out[b, o * 128:(o + 1) * 128, r, :], src=result)
    return X_out
