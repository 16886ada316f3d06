"""LayerNorm (NKI layernorm tutorial): v1 with nl APIs, v2 with bn_stats/bn_aggr and nisa.tensor_scalar.

out = (x - mean) / sqrt(var + eps) * gamma + beta over each row; rows tile by 128 with the last tile
masked.
"""

from __future__ import annotations

import math

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np


@nki.jit
def nki_layernorm_kernel_v1(input_tensor, epsilon, gamma_vector, beta_vector):
    """nl.mean / nl.subtract / nl.rsqrt, row tiles of 128 with a mask on the last one."""
    output_tensor = nl.ndarray(input_tensor.shape, dtype=input_tensor.dtype, buffer=nl.shared_hbm)
    assert input_tensor.shape[1] == gamma_vector.shape[0] == beta_vector.shape[0]
    num_rows, hidden = input_tensor.shape
    i_p_io = nl.arange(nl.tile_size.pmax)[:, None]
    i_f_io = nl.arange(hidden)[None, :]
    i_p_param = nl.arange(1)[:, None]

    gamma_sb = nl.load(gamma_vector.reshape((1, hidden))[i_p_param, i_f_io])
    beta_sb = nl.load(beta_vector.reshape((1, hidden))[i_p_param, i_f_io])

    for i in nl.affine_range(math.ceil(num_rows / nl.tile_size.pmax)):
        rows = i * nl.tile_size.pmax + i_p_io
        input_sb = nl.load(input_tensor[rows, i_f_io], mask=(rows < num_rows))
        mean = nl.mean(input_sb, axis=[1], mask=(rows < num_rows))
        shifted = nl.subtract(input_sb, mean, mask=(rows < num_rows))
        var = nl.mean(nl.square(shifted, mask=(rows < num_rows)), axis=[1], mask=(rows < num_rows))
        rstd = nl.rsqrt(var + epsilon, mask=(rows < num_rows))
        normalized = nl.multiply(shifted, rstd, mask=(rows < num_rows))
        scaled = nl.multiply(normalized, gamma_sb.broadcast_to((nl.tile_size.pmax, hidden)),
                             mask=(rows < num_rows))
        output_sb = nl.add(scaled, beta_sb.broadcast_to((nl.tile_size.pmax, hidden)), mask=(rows < num_rows))
        nl.store(output_tensor[rows, i_f_io], value=output_sb, mask=(rows < num_rows))
    return output_tensor


@nki.jit
def nki_layernorm_kernel_v2(input_tensor, epsilon, gamma_vector, beta_vector):
    """bn_stats over 512-wide chunks (ragged last chunk masked), bn_aggr, then one tensor_scalar."""
    output_tensor = nl.ndarray(input_tensor.shape, dtype=input_tensor.dtype, buffer=nl.shared_hbm)
    num_rows, hidden = input_tensor.shape
    i_p_io = nl.arange(nl.tile_size.pmax)[:, None]
    i_f_io = nl.arange(hidden)[None, :]
    i_p_param = nl.arange(1)[:, None]

    gamma_sb = nl.load(gamma_vector.reshape((1, hidden))[i_p_param, i_f_io])
    beta_sb = nl.load(beta_vector.reshape((1, hidden))[i_p_param, i_f_io])

    bn_stats_fmax = nl.tile_size.bn_stats_fmax
    num_bn_stats = math.ceil(hidden / bn_stats_fmax)
    i_f_bn = nl.arange(bn_stats_fmax)[None, :]
    i_f_stats = nl.arange(6)[None, :]

    for i in nl.affine_range(math.ceil(num_rows / nl.tile_size.pmax)):
        rows = i * nl.tile_size.pmax + i_p_io
        input_sb = nl.load(input_tensor[rows, i_f_io], mask=(rows < num_rows))

        stats = nl.ndarray((nl.tile_size.pmax, 6 * num_bn_stats), dtype=np.float32)
        for j in nl.affine_range(num_bn_stats):
            stats[i_p_io, j * 6 + i_f_stats] = nisa.bn_stats(
                input_sb[i_p_io, j * bn_stats_fmax + i_f_bn],
                mask=(j * bn_stats_fmax + i_f_bn < hidden), dtype=np.float32)
        mean_var = nisa.bn_aggr(stats)
        mean = mean_var[i_p_io, 0]
        var = mean_var[i_p_io, 1]
        rstd = nl.rsqrt(var + epsilon)

        shifted = nisa.tensor_scalar(data=input_sb, op0=np.subtract, operand0=mean, op1=np.multiply,
                                     operand1=rstd)
        scaled = nl.multiply(shifted, gamma_sb.broadcast_to((nl.tile_size.pmax, hidden)), mask=(rows < num_rows))
        output_sb = nl.add(scaled, beta_sb.broadcast_to((nl.tile_size.pmax, hidden)), mask=(rows < num_rows),
                           dtype=output_tensor.dtype)
        nl.store(output_tensor[rows, i_f_io], value=output_sb, mask=(rows < num_rows))
    return output_tensor
