"""Direct allocation (ncc.sbuf.mod_alloc): physical placement, rotation and aliasing."""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.compiler as ncc
import neuronxcc.nki.language as nl
import numpy as np
import pytest

FREE = 100


def make_vector_add(b_base: int, rotate: int):
    """CS149-style direct-allocation vector add; ``b_base`` places b's tiles in SBUF."""

    @nki.jit
    def vector_add_direct(a_vec, b_vec):
        n = a_vec.shape[0] // (128 * FREE)
        out = nl.ndarray(a_vec.shape, dtype=a_vec.dtype, buffer=nl.hbm)
        a3, b3, o3 = (t.reshape((n, 128, FREE)) for t in (a_vec, b_vec, out))
        a_t = nl.ndarray((n, nl.par_dim(128), FREE), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(rotate,)))
        b_t = nl.ndarray((n, nl.par_dim(128), FREE), dtype=a_vec.dtype,
                         buffer=ncc.sbuf.mod_alloc(base_addr=b_base, num_free_tiles=(rotate,)))
        for m in nl.affine_range(n):
            a_t[m] = nl.load(a3[m])
            b_t[m] = nl.load(b3[m])
            nl.store(o3[m], nl.add(a_t[m], b_t[m]))
        return out

    return vector_add_direct


@pytest.fixture
def vectors() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    size = 128 * FREE * 6
    return rng.random(size, dtype=np.float32), rng.random(size, dtype=np.float32)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("rotate", [1, 2, 4])
def test_disjoint_rotating_allocations_are_correct(vectors, rotate: int) -> None:
    a, b = vectors
    kernel = make_vector_add(b_base=rotate * FREE * 4, rotate=rotate)
    np.testing.assert_array_equal(kernel(a, b), a + b)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_overlapping_allocations_alias_and_give_wrong_results(vectors) -> None:
    a, b = vectors
    out = make_vector_add(b_base=0, rotate=2)(a, b)  # b's tiles overwrite a's
    assert not np.allclose(out, a + b)
    np.testing.assert_array_equal(out, b + b)
