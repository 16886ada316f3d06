"""Issue 20 scope 5: direct allocation as AWS defines it, and PSUM accumulation groups in reused banks.

- A block tensor of ``mod_alloc`` holds its physical tiles, not its logical size (nki-samples' pipelined flash
  attention: 4 MiB of logical blocks per partition in 64 KiB of tiles).
- ``psum.mod_alloc(num_bank_tiles=...)`` puts its tiles one bank apart (AWS's attention tutorial v9/v10 puts
  blocks of 128 fp32 in banks 0..6), so they alias whatever else lives in those banks.
- ``ncc.sbuf.alloc(func)`` / ``ncc.psum.alloc(func)`` place blocks where the function says (AWS's
  ``test_*_modulo_alloc.py``; nki-samples' pipelined attention).
- The first matmul into a block of a PSUM tensor whose bank an earlier block used starts a new accumulation
  group instead of adding onto the previous group's sums (the tutorial's v9/v10 were wrong from row 128).

Every value test compares with NumPy; each fails on the behaviour it replaces (logical size charged, banks laid
out as bytes, placement functions ignored, accumulation carried over).
"""

from __future__ import annotations

import warnings

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
import numpy as np
import pytest

from nkisim import api

RNG = np.random.default_rng(22)
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


# --- accumulation groups in a reused PSUM bank (AWS attention tutorial v9/v10) ---------------------------------
def _blockwise_matmul(n_q: int, n_kv: int):
    """out[q] = sum over kv of s[kv, q].T @ v[kv]: every q block accumulates in PSUM bank 7, which all of
    ``acc``'s blocks share (``num_bank_tiles=(1,)``), as attn_out_psum in the tutorial's v9."""

    @nki.jit
    def kernel(s, v):
        out = nl.ndarray((n_q * 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.ndarray((n_q, nl.par_dim(128), 128), dtype=nl.float32,
                         buffer=ncc.psum.mod_alloc(base_bank=7, num_bank_tiles=(1,)))
        for q in nl.sequential_range(n_q):
            for kv in nl.affine_range(n_kv):
                st = nl.load(s[kv * 128:(kv + 1) * 128, q * 128:(q + 1) * 128])
                mv = nl.load(v[kv * 128:(kv + 1) * 128, :])
                acc[q, :, :] += nisa.nc_matmul(st, mv)
            nl.store(out[q * 128:(q + 1) * 128, :], nisa.tensor_copy(acc[q, :, :]))
        return out

    return kernel


def test_first_matmul_into_a_reused_bank_starts_a_new_group() -> None:
    s = RNG.standard_normal((256, 384), dtype=np.float32)
    v = RNG.standard_normal((256, 128), dtype=np.float32)
    got = _blockwise_matmul(3, 2)(s, v)
    ref = s.astype(np.float64).T @ v.astype(np.float64)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-3)  # rows 128.. too, not the running sum


def test_accumulation_group_within_one_block_still_adds() -> None:
    s = RNG.standard_normal((512, 128), dtype=np.float32)
    v = RNG.standard_normal((512, 128), dtype=np.float32)
    np.testing.assert_allclose(_blockwise_matmul(1, 4)(s, v), s.astype(np.float64).T @ v, rtol=1e-4, atol=1e-3)


# --- PSUM banks --------------------------------------------------------------------------------------------------
def test_num_bank_tiles_places_tiles_one_bank_apart() -> None:
    """x's block 1 is bank 1 (not byte 512 of bank 0), so y, allocated at bank 1, overwrites it."""

    @nki.jit
    def kernel(a, b, ident):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray((4, nl.par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.psum.mod_alloc(base_bank=0, num_bank_tiles=(4,)))
        y = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=1))
        i = nl.load(ident)
        x[1, :, :] = nisa.nc_matmul(nl.load(a), i)
        y[...] = nisa.nc_matmul(nl.load(b), i)
        nl.store(out, nisa.tensor_copy(x[1, :, :]))
        return out

    a = RNG.standard_normal((128, 128), dtype=np.float32)
    b = RNG.standard_normal((128, 128), dtype=np.float32)
    got = kernel(a, b, np.eye(128, dtype=np.float32))
    np.testing.assert_allclose(got, b.T, rtol=1e-6)


def test_psum_tiles_beyond_the_last_bank_are_refused() -> None:
    @nki.jit
    def kernel(a):
        x = nl.ndarray((4, nl.par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.psum.mod_alloc(base_bank=6, num_bank_tiles=(4,)))
        x[0, :, :] = nl.load(a)
        return a

    with pytest.raises(ValueError, match="past the 16384 bytes per partition PSUM has"):
        kernel(np.zeros((128, 128), np.float32))


# --- SBUF: physical size, default tile count -------------------------------------------------------------------
def test_block_tensor_is_charged_its_physical_tiles() -> None:
    # 1024 logical blocks of 2 KiB per partition (2 MiB, ten times SBUF) in two physical tiles (4 KiB)
    @nki.jit
    def kernel(a):
        n = a.shape[0] // 128
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((n, nl.par_dim(128), a.shape[1]), dtype=a.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        r = nl.ndarray((n, nl.par_dim(128), a.shape[1]), dtype=a.dtype,
                       buffer=ncc.sbuf.mod_alloc(base_addr=4096, num_free_tiles=(2,)))
        for i in nl.affine_range(n):
            t[i] = nl.load(a[i * 128:(i + 1) * 128, :])
            r[i] = nisa.tensor_scalar(t[i], np.multiply, 2.0)
            nl.store(out[i * 128:(i + 1) * 128, :], r[i])
        return out

    a = RNG.standard_normal((1024 * 128, 512), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a * 2)


def test_physical_tiles_past_sbuf_are_refused() -> None:
    @nki.jit
    def kernel(a):
        t = nl.ndarray((120, nl.par_dim(128), 512), dtype=nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(120,)))
        t[0] = nl.load(a)
        return a

    with pytest.raises(ValueError, match="120 physical tile"):
        kernel(np.zeros((128, 512), np.float32))


def test_mod_alloc_without_tile_counts_keeps_one_tile() -> None:
    """AWS's reference function: an empty ``num_free_tiles`` is ``(1, 1, ...)``, so every block is tile 0."""

    @nki.jit
    def kernel(a, b):
        out = nl.ndarray((128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        t[0] = nl.load(a)
        t[1] = nl.load(b)  # the same physical tile
        nl.store(out, t[0])
        return out

    a, b = (RNG.standard_normal((128, 64), dtype=np.float32) for _ in range(2))
    np.testing.assert_array_equal(kernel(a, b), b)


# --- placement functions -------------------------------------------------------------------------------------------
def _modulo_func(base: int, tiles: int):
    """The form of AWS's reference ``mod_alloc`` function for one block dimension."""

    def func(idx, pdim_size, fdim_size):
        return 0, base + (idx[0] % tiles) * fdim_size

    return func


def _vector_add_placed(b_base: int):
    @nki.jit
    def kernel(a_vec, b_vec):
        n = a_vec.shape[0] // 128
        out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
        a_t = nl.ndarray((n, nl.par_dim(128), a_vec.shape[1]), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.alloc(_modulo_func(0, 2)))
        b_t = nl.ndarray((n, nl.par_dim(128), a_vec.shape[1]), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.alloc(_modulo_func(b_base, 2)))
        for m in nl.affine_range(n):
            a_t[m] = nl.load(a_vec[m * 128:(m + 1) * 128, :])
            b_t[m] = nl.load(b_vec[m * 128:(m + 1) * 128, :])
            nl.store(out[m * 128:(m + 1) * 128, :], nl.add(a_t[m], b_t[m]))
        return out

    return kernel


def test_sbuf_alloc_function_places_blocks() -> None:
    a, b = (RNG.standard_normal((6 * 128, 100), dtype=np.float32) for _ in range(2))
    np.testing.assert_array_equal(_vector_add_placed(800)(a, b), a + b)
    # the same function placing b on a's bytes: b's tiles overwrite a's, as on hardware
    np.testing.assert_array_equal(_vector_add_placed(0)(a, b), b + b)


def test_psum_alloc_function_places_blocks_by_bank() -> None:
    """nki-samples' pipelined attention places PSUM blocks with ``(tile_i % 4, 0, 0)``."""

    def by_bank(idx, pdim_size, fdim_size):
        _grp, tile = idx
        return tile % 4, 0, 0

    @nki.jit
    def kernel(a, ident):
        out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray((2, 8, nl.par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.alloc(by_bank))
        y = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=1))
        y[...] = nisa.nc_matmul(nl.load(a), nl.load(ident))
        nl.store(out, nisa.tensor_copy(x[1, 5, :, :]))  # block (1, 5): bank 1, where y is
        return out

    a = RNG.standard_normal((128, 128), dtype=np.float32)
    np.testing.assert_allclose(kernel(a, np.eye(128, dtype=np.float32)), a.T, rtol=1e-6)


def _bank_map_kernel(bank_map: dict):
    """nki-samples' allocated attention: ``functools.partial(f, bank_map=...)`` of ``f(bank_map, idx, pdim_size,
    fdim_size)``, two blocks in banks that are not next to each other (1 and 5)."""
    import functools

    def psum_addr(bank_map, idx, pdim_size, fdim_size):
        return bank_map[idx], 0, 0

    @nki.jit
    def kernel(a, ident):
        out = nl.ndarray((2, 128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
        x = nl.ndarray((2, nl.par_dim(128), 128), dtype=nl.float32,
                       buffer=ncc.psum.alloc(functools.partial(psum_addr, bank_map=bank_map)))
        y = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=ncc.psum.mod_alloc(base_bank=5))
        x[0] = nisa.nc_matmul(nl.load(a), nl.load(ident))
        y[...] = nisa.nc_matmul(nl.load(ident), nl.load(a))  # bank 5: block 1 of x, if x is where bank_map says
        nl.store(out[0], nisa.tensor_copy(x[0]))
        nl.store(out[1], nisa.tensor_copy(x[1]))
        return out

    return kernel


def test_allocation_function_is_called_by_its_documented_parameter_names() -> None:
    """The compiler passes ``idx``, ``pdim_size`` and ``fdim_size`` by name, so a ``functools.partial`` binding a
    leading parameter by keyword works (it failed with "got multiple values for argument 'bank_map'"); blocks
    evenly spaced but not one bank apart (banks 1 and 5) are placed where the function says, in a launch and in
    the program it leaves."""
    a = RNG.standard_normal((128, 128), dtype=np.float32)
    ident = np.eye(128, dtype=np.float32)
    kernel = _bank_map_kernel({(0,): 1, (1,): 5})
    got = kernel(a, ident)
    np.testing.assert_allclose(got[0], a.T, rtol=1e-6)
    np.testing.assert_allclose(got[1], a, rtol=1e-6)  # x[1] is bank 5, which y wrote
    program = api.trace(kernel, (a, ident))
    again = api.program_from_json(program.to_json())
    assert again == program
    np.testing.assert_array_equal(api.execute(again, (a, ident)).outputs, got)
    # the same banks in decreasing order: refused clearly (nkisim's placements step forwards), not misplaced
    with pytest.raises(ValueError, match=r"later blocks at lower addresses \(bank steps \[-4\]"):
        _bank_map_kernel({(0,): 5, (1,): 1})(a, ident)


def test_allocation_function_with_other_parameter_names_is_called_positionally() -> None:
    def place(i, p, f):  # not the documented names: called as func(idx, pdim_size, fdim_size)
        return 0, 1024 + (i[0] % 2) * 3 * f  # blocks three tiles apart, not C order

    @nki.jit
    def kernel(a):
        out = nl.ndarray((2, 128, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((2, nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.alloc(place))
        u = nl.ndarray((nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=1024 + 3 * 256))
        t[0] = nl.load(a[0])
        u[...] = nl.load(a[1])  # the bytes of t's block 1
        nl.store(out[0], t[0])
        nl.store(out[1], t[1])
        return out

    a = RNG.standard_normal((2, 128, 64), dtype=np.float32)
    np.testing.assert_array_equal(kernel(a), a)


@pytest.mark.parametrize("steps, match", [([0, 0], "must not all be 0"), ([-1], "tile steps"),
                                          ([1 << 21], "tile steps")])
def test_a_forged_tile_step_is_refused(steps, match) -> None:
    import json

    from nkisim.program.ir import ProgramError
    a = RNG.standard_normal((128, 128), dtype=np.float32)
    raw = api.trace(_bank_map_kernel({(0,): 1, (1,): 5}), (a, np.eye(128, dtype=np.float32))).to_json()
    assert raw.count('["psum",0,0,[],[2],1,[4]]') == 1
    forged = raw.replace('["psum",0,0,[],[2],1,[4]]', f'["psum",0,0,[],[2],1,{json.dumps(steps)}]')
    with pytest.raises(ProgramError, match=match):
        api.program_from_json(forged)


def test_a_tile_step_past_the_last_bank_is_refused_when_placed() -> None:
    with pytest.raises(Exception, match="(?i)bank|psum"):
        _bank_map_kernel({(0,): 1, (1,): 9})(np.zeros((128, 128), np.float32), np.eye(128, dtype=np.float32))


def test_allocation_function_that_is_no_modulo_allocation_is_refused_clearly() -> None:
    def scattered(idx, pdim_size, fdim_size):
        return 0, [0, 4096, 1024][idx[0]]

    @nki.jit
    def kernel(a):
        t = nl.ndarray((3, nl.par_dim(128), 64), dtype=nl.float32, buffer=ncc.sbuf.alloc(scattered))
        t[0] = nl.load(a)
        return a

    with pytest.raises(ValueError, match="modulo allocation"):
        kernel(np.zeros((128, 64), np.float32))


def test_placement_function_programs_execute_like_the_launch() -> None:
    a, b = (RNG.standard_normal((4 * 128, 100), dtype=np.float32) for _ in range(2))
    program = api.trace(_vector_add_placed(0), (a, b))
    np.testing.assert_array_equal(api.execute(program, (a, b)).outputs, b + b)


# --- the cost model sees the placement ------------------------------------------------------------------------------
def _two_stage(b_base: int):
    """Two tensors per iteration: disjoint (b_base=4096) they pipeline, on the same bytes (0) they serialise."""

    @nki.jit
    def kernel(a_vec, b_vec):
        n = a_vec.shape[0] // 128
        out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.shared_hbm)
        a_t = nl.ndarray((n, nl.par_dim(128), 512), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        b_t = nl.ndarray((n, nl.par_dim(128), 512), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=b_base, num_free_tiles=(2,)))
        for m in nl.affine_range(n):
            a_t[m] = nl.load(a_vec[m * 128:(m + 1) * 128, :])
            b_t[m] = nl.load(b_vec[m * 128:(m + 1) * 128, :])
            nl.store(out[m * 128:(m + 1) * 128, :], nl.add(a_t[m], b_t[m]))
        return out

    return kernel


def test_tensors_on_the_same_bytes_wait_for_each_other() -> None:
    a = np.zeros((16 * 128, 512), np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        disjoint = api.launch(_two_stage(4096), (a, a)).latency_us()
        aliased = api.launch(_two_stage(0), (a, a)).latency_us()
    assert aliased > 1.1 * disjoint
