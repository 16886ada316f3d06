"""The NKI LayerNorm tutorial's two kernels (trn1 nki.benchmark p50: v1 2311 us, v2 1969 us).

v1 uses nki.language only (mean, square, rsqrt, broadcast arithmetic); v2 computes the statistics
with nisa.bn_stats / nisa.bn_aggr and fuses shift and scale into one nisa.tensor_scalar.  The
tutorial script benchmarks a (4096, 8192) fp32 input; its text mentions (300, 1000).
"""

import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


def _params(gamma_vector, beta_vector, n_cols):
    i_p = nl.arange(1)[:, None]
    i_f = nl.arange(n_cols)[None, :]
    gamma = nl.load(gamma_vector.reshape((1, n_cols))[i_p, i_f])
    beta = nl.load(beta_vector.reshape((1, n_cols))[i_p, i_f])
    return (gamma.broadcast_to((nl.tile_size.pmax, n_cols)), beta.broadcast_to((nl.tile_size.pmax, n_cols)))


def v1(**jit):
    @nki.jit(**jit)
    def nki_layernorm_kernel_v1(input_tensor, epsilon, gamma_vector, beta_vector):
        out = nl.ndarray(input_tensor.shape, dtype=input_tensor.dtype, buffer=nl.shared_hbm)
        rows, cols = input_tensor.shape
        i_p = nl.arange(nl.tile_size.pmax)[:, None]
        i_f = nl.arange(cols)[None, :]
        gamma, beta = _params(gamma_vector, beta_vector, cols)
        for i in nl.affine_range(math.ceil(rows / nl.tile_size.pmax)):
            row = i * nl.tile_size.pmax + i_p
            x = nl.load(input_tensor[row, i_f], mask=(row < rows))
            mean = nl.mean(x, axis=1)
            var = nl.mean(nl.square(x), axis=1) - mean * mean
            y = (x - mean) * nl.rsqrt(var + epsilon)
            y = y * gamma + beta
            nl.store(out[row, i_f], value=y, mask=(row < rows))
        return out
    return nki_layernorm_kernel_v1


def v2(**jit):
    @nki.jit(**jit)
    def nki_layernorm_kernel_v2(input_tensor, epsilon, gamma_vector, beta_vector):
        out = nl.ndarray(input_tensor.shape, dtype=input_tensor.dtype, buffer=nl.shared_hbm)
        rows, cols = input_tensor.shape
        i_p = nl.arange(nl.tile_size.pmax)[:, None]
        i_f = nl.arange(cols)[None, :]
        gamma, beta = _params(gamma_vector, beta_vector, cols)
        fmax = nl.tile_size.bn_stats_fmax
        n_stats = math.ceil(cols / fmax)
        i_bn = nl.arange(fmax)[None, :]
        i_six = nl.arange(6)[None, :]
        for i in nl.affine_range(math.ceil(rows / nl.tile_size.pmax)):
            row = i * nl.tile_size.pmax + i_p
            x = nl.load(input_tensor[row, i_f], mask=(row < rows))
            stats = nl.ndarray((nl.tile_size.pmax, 6 * n_stats), dtype=np.float32)
            for j in nl.affine_range(n_stats):
                stats[i_p, j * 6 + i_six] = nisa.bn_stats(x[i_p, j * fmax + i_bn],
                                                          mask=(j * fmax + i_bn < cols), dtype=np.float32)
            mean_var = nisa.bn_aggr(stats[i_p, nl.arange(6 * n_stats)[None, :]])
            mean = mean_var[i_p, 0]
            scale = nl.rsqrt(mean_var[i_p, 1] + epsilon)
            y = nisa.tensor_scalar(data=x, op0=np.subtract, operand0=mean, op1=np.multiply, operand1=scale)
            y = y * gamma + beta
            nl.store(out[row, i_f], value=y, mask=(row < rows))
        return out
    return nki_layernorm_kernel_v2
