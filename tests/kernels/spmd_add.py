"""2-D SPMD tensor add (NKI getting-started tutorial): ``kernel[gx, gy](a, b)``, one tile per instance."""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

TILE_P = 128
TILE_F = 512


@nki.jit
def nki_tensor_add_kernel(a_input, b_input):
    """Each instance (program_id(0), program_id(1)) adds one [128, 512] tile of the inputs."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    offset_i_x = nl.program_id(0) * TILE_P
    offset_i_y = nl.program_id(1) * TILE_F
    ix = offset_i_x + nl.arange(TILE_P)[:, None]
    iy = offset_i_y + nl.arange(TILE_F)[None, :]
    a_tile = nl.load(a_input[ix, iy])
    b_tile = nl.load(b_input[ix, iy])
    c_tile = a_tile + b_tile
    nl.store(c_output[ix, iy], value=c_tile)
    return c_output


def tensor_add(a, b):
    """Launch one instance per [128, 512] tile of the (multiple-of-tile) inputs."""
    grid_x = a.shape[0] // TILE_P
    grid_y = a.shape[1] // TILE_F
    return nki_tensor_add_kernel[grid_x, grid_y](a, b)


@nki.jit
def nki_tensor_add_ragged(a_input, b_input):
    """Ragged shapes: every instance masks the parts of its tile that fall outside the tensor."""
    c_output = nl.ndarray(a_input.shape, dtype=a_input.dtype, buffer=nl.shared_hbm)
    M, N = a_input.shape
    ix = nl.program_id(0) * TILE_P + nl.arange(TILE_P)[:, None]
    iy = nl.program_id(1) * TILE_F + nl.arange(TILE_F)[None, :]
    in_bounds = (ix < M) & (iy < N)
    a_tile = nl.load(a_input[ix, iy], mask=in_bounds)
    b_tile = nl.load(b_input[ix, iy], mask=in_bounds)
    c_tile = nl.add(a_tile, b_tile, mask=in_bounds)
    nl.store(c_output[ix, iy], value=c_tile, mask=in_bounds)
    return c_output


def tensor_add_ragged(a, b):
    grid_x = (a.shape[0] + TILE_P - 1) // TILE_P
    grid_y = (a.shape[1] + TILE_F - 1) // TILE_F
    return nki_tensor_add_ragged[grid_x, grid_y](a, b)
