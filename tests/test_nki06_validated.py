"""Issue 29: what AWS's validated kernels write runs, where a doc (or nothing) said otherwise.

nki-library's release branches are validated on AWS's compiler, so a spelling they use is one the compiler accepts.
Each test here is one such spelling, written the way nki-library writes it, checked against NumPy: the reshape of
an output returned from the kernel, ordered NeuronCore generations, per-partition offsets in a ``[P, 1, 1]`` tile,
``nl.range``, an empty slice, and an optional tensor tested by its truth value.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import nkisim

nkisim.install()

import nki  # noqa: E402
import nki.isa as nisa  # noqa: E402
import nki.language as nl  # noqa: E402

RNG = np.random.default_rng(29)


@nki.jit
def _flat_then_reshaped(x):
    """nki-library's ``return out.reshape(shape)``: the output allocated flat, returned in the caller's shape."""
    b, s, h = x.shape
    out = nl.ndarray((b * s, h), dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((b * s, h), dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x.reshape((b * s, h)))
    nisa.activation(dst=t, op=nl.exp, data=t)
    nisa.dma_copy(dst=out, src=t)
    return out.reshape((b, s, h))


def test_a_kernel_returns_a_reshape_of_its_whole_output():
    x = RNG.standard_normal((2, 64, 16)).astype(np.float32)
    got = _flat_then_reshaped(x)
    assert got.shape == (2, 64, 16)
    np.testing.assert_allclose(got, np.exp(x), rtol=1e-5)


def test_returning_part_of_a_tensor_is_a_simulator_limit_not_a_compiler_rule():
    @nki.jit
    def half(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=x)
        return out[0:64, :]

    with pytest.raises(NotImplementedError, match="the simulator returns whole tensors or reshapes of them"):
        half(np.ones((128, 8), np.float32))


@pytest.mark.parametrize(("target", "gen"), [("trn1", 2), ("trn2", 3), ("trn3", 4)])
def test_neuroncore_generations_are_ordered(monkeypatch: pytest.MonkeyPatch, target: str, gen: int):
    """``nisa.get_nc_version() <= nisa.nc_version.gen2`` as nki-library's kernels branch on it."""
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)

    @nki.jit
    def which(x):
        out = nl.ndarray((1, 3), dtype=nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((1, 3), dtype=nl.float32, buffer=nl.sbuf)
        nisa.memset(dst=t[:, 0:1], value=1.0 if nisa.get_nc_version() <= nisa.nc_version.gen2 else 0.0)
        nisa.memset(dst=t[:, 1:2], value=1.0 if nisa.get_nc_version() >= nisa.nc_version.gen3 else 0.0)
        nisa.memset(dst=t[:, 2:3], value=1.0 if nisa.get_nc_version() > nisa.nc_version.gen3 else 0.0)
        nisa.dma_copy(dst=out, src=t)
        return out

    got = which(np.ones((1, 1), np.float32))[0]
    np.testing.assert_array_equal(got, [gen <= 2, gen >= 3, gen > 3])
    assert sorted([nisa.nc_version.gen4, nisa.nc_version.gen2, nisa.nc_version.gen3]) == list(nisa.nc_version)
    with pytest.raises(TypeError):
        _ = nisa.engine.vector < nisa.engine.scalar  # other enums keep == / != only (language guide)


def test_per_partition_offsets_in_a_p_by_1_by_1_tile():
    """nki-library's ``.ap(vector_offset=t)`` with a [P, 1, 1] offsets tile: one row per partition."""
    data = RNG.standard_normal((64, 32)).astype(np.float32)
    idx = RNG.integers(0, 64, (128, 1, 1)).astype(np.int32)

    @nki.jit
    def gather(data, indices):
        out = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.shared_hbm)
        offsets = nl.ndarray((128, 1, 1), dtype=nl.int32, buffer=nl.sbuf)
        nisa.dma_copy(dst=offsets, src=indices)
        rows = nl.ndarray((128, 32), dtype=data.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=rows, src=data.ap([[32, 128], [1, 32]], vector_offset=offsets, indirect_dim=0))
        nisa.dma_copy(dst=out, src=rows)
        return out

    np.testing.assert_array_equal(gather(data, idx), data[idx[:, 0, 0]])


def test_nl_range_loops_like_python_range():
    @nki.jit
    def cumulative(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
        nisa.memset(dst=acc, value=0.0)
        col = nl.ndarray((x.shape[0], 1), dtype=x.dtype, buffer=nl.sbuf)
        for j in nl.range(x.shape[1]):
            nisa.dma_copy(dst=col, src=x[:, j:j + 1])
            nisa.tensor_tensor(dst=acc, data1=acc, data2=col, op=nl.add)
            nisa.dma_copy(dst=out[:, j:j + 1], src=acc)
        return out

    x = RNG.standard_normal((8, 6)).astype(np.float32)
    np.testing.assert_allclose(cumulative(x), np.cumsum(x, axis=1), rtol=1e-5)
    assert list(nl.range(2, 8, 3)) == [2, 5]


def test_a_one_dimensional_view_across_rows_of_hbm():
    """A ``[[1, n]]`` pattern that crosses the rows of a 2-D HBM tensor (nki-library's attention_tkg copies such
    views): the elements in storage order."""

    @nki.jit
    def copy(x):
        out = nl.ndarray((4, 5), dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out.ap([[1, 20]], offset=0), src=x.ap([[1, 20]], offset=6))
        return out

    x = np.arange(32, dtype=np.float32).reshape(4, 8)
    np.testing.assert_array_equal(copy(x), x.reshape(-1)[6:26].reshape(4, 5))


def test_a_directly_placed_kernel_transposes_on_the_pe_array_into_its_own_psum_tile():
    """nki-library's tp_broadcast: ``nc_transpose`` into a PSUM tile placed with ``address=``, the source an SBUF
    tile placed too, whose ``buffer`` is ``nl.sbuf`` like any SBUF tensor's."""

    @nki.jit
    def transpose(x):
        src = nl.ndarray((64, 32), dtype=nl.float32, buffer=nl.sbuf, address=(0, 0))
        assert src.buffer == nl.sbuf and nl.is_sbuf(src.buffer)
        nisa.dma_copy(dst=src, src=x)
        tp = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.psum, address=(0, 0))
        nisa.nc_transpose(dst=tp, data=src)
        res = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.sbuf, address=(0, 4096))
        nisa.tensor_copy(dst=res, src=tp)
        out = nl.ndarray((32, 64), dtype=nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=res)
        return out

    x = RNG.standard_normal((64, 32)).astype(np.float32)
    np.testing.assert_allclose(transpose(x), x.T, rtol=1e-6)


def test_an_empty_slice_is_a_view_of_nothing():
    @nki.jit
    def empty(x):
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        assert x[:, 0:0].shape == (x.shape[0], 0)
        nisa.dma_copy(dst=out, src=x)
        return out

    x = np.ones((4, 8), np.float32)
    np.testing.assert_array_equal(empty(x), x)


def test_tensor_scalar_reduce_takes_every_option_aws_documents():
    """Scope 4: reduce_res=None keeps the reduction in the registers, reduce_cmd=reduce continues it, load_reduce
    starts from reduce_init (a scalar or a [P, 1] float32 tile), reduce_res_negate negates the read-out only."""

    @nki.jit
    def chained(a, b, init):
        parts, free = a.shape
        out = nl.ndarray((parts, 5), dtype=nl.float32, buffer=nl.shared_hbm)
        ta = nl.ndarray((parts, free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ta, src=a)
        tb = nl.ndarray((parts, free), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=tb, src=b)
        ti = nl.ndarray((parts, 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=ti, src=init)
        d = nl.ndarray((parts, free), dtype=nl.float32, buffer=nl.sbuf)
        r = nl.ndarray((parts, 5), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=d, data=ta, op0=nl.multiply, operand0=2.0, reduce_op=nl.add)
        nisa.tensor_scalar_reduce(dst=d, data=tb, op0=nl.multiply, operand0=2.0, reduce_op=nl.add,
                                  reduce_res=r[:, 0:1], reduce_cmd=nisa.reduce_cmd.reduce)
        nisa.tensor_scalar_reduce(dst=d, data=ta, op0=nl.add, operand0=1.0, reduce_op=nl.maximum,
                                  reduce_res=r[:, 1:2], reduce_res_negate=True)
        nisa.tensor_scalar_reduce(dst=d, data=tb, op0=nl.add, operand0=0.0, reduce_op=nl.maximum,
                                  reduce_res=r[:, 2:3], reduce_cmd=nisa.reduce_cmd.reduce)  # the max, not negated
        nisa.tensor_scalar_reduce(dst=d, data=ta, op0=nl.add, operand0=0.0, reduce_op=nl.add,
                                  reduce_res=r[:, 3:4], reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=ti)
        nisa.tensor_scalar_reduce(dst=d, data=ta, op0=nl.subtract, operand0=1.0, reduce_op=nl.add,
                                  reduce_res=r[:, 4:5], reduce_cmd=nisa.reduce_cmd.load_reduce, reduce_init=5.0)
        nisa.dma_copy(dst=out, src=r)
        return out

    a, b = RNG.standard_normal((2, 16, 8)).astype(np.float32)
    init = RNG.standard_normal((16, 1)).astype(np.float32)
    want = np.stack([(2 * a).sum(1) + (2 * b).sum(1), -(a + 1).max(1), np.maximum((a + 1).max(1), b.max(1)),
                     a.sum(1) + init[:, 0], (a - 1).sum(1) + 5], axis=1)
    np.testing.assert_allclose(chained(a, b, init), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"reduce_cmd": "idle"}, "must be reset_reduce, reduce or load_reduce"),
    ({"reduce_cmd": "load_reduce"}, "'reduce_init' of 'tensor_scalar_reduce' must be given"),
])
def test_tensor_scalar_reduce_refuses_what_aws_does_not_support(kwargs, match):
    from nkisim.core.errors import NKIError

    kw = {k: getattr(nisa.reduce_cmd, v) if k == "reduce_cmd" else v for k, v in kwargs.items()}

    @nki.jit
    def body(a):
        t = nl.ndarray(a.shape, dtype=nl.float32, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=a)
        r = nl.ndarray((a.shape[0], 1), dtype=nl.float32, buffer=nl.sbuf)
        nisa.tensor_scalar_reduce(dst=t, data=t, op0=nl.add, operand0=1.0, reduce_op=nl.add, reduce_res=r, **kw)
        return a

    with pytest.raises(NKIError, match=match):
        body(np.ones((4, 4), np.float32))


def test_a_broadcast_pattern_over_hbm_reads_one_row_into_every_partition():
    """attention_bwd's ``sinks.ap([[0, P], [S, H], [1, S]], offset=...)`` (stride 0 on the partitions): before, a
    ZeroDivisionError in the simulator's layout code."""

    @nki.jit
    def spread(x):
        out = nl.ndarray((8, 3, 4), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((8, 3, 4), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x.ap(pattern=[[0, 8], [4, 3], [1, 4]], offset=12))
        nisa.dma_copy(dst=out, src=t)
        return out

    x = np.arange(48, dtype=np.float32).reshape(4, 12)
    np.testing.assert_array_equal(spread(x), np.broadcast_to(x.reshape(-1)[12:24].reshape(3, 4), (8, 3, 4)))


def test_a_dataclass_nkiobject_without_annotated_fields_is_built_from_keywords():
    """attention_cte's ``@dataclass class SectionParams(nl.NKIObject)`` with plain class attributes, built as
    ``SectionParams(section_idx=..., ...)``."""
    import dataclasses

    @dataclasses.dataclass
    class Section(nl.NKIObject):
        index = None
        offset = None

    @dataclasses.dataclass(frozen=True)
    class Sized(nl.NKIObject):
        size: int = 1

    s = Section(index=3, offset=12)
    assert (s.index, s.offset) == (3, 12) and Section().index is None
    z = Sized(size=4, label="x")
    assert (z.size, z.label) == (4, "x")


def test_an_nkiobject_field_given_no_value_is_none_as_the_compilers_initializer_makes_it():
    """AWS's language guide (nki-language-guide.rst:590-595): the compiler creates ``__init__(self, x = None, y =
    False)`` for ``x: int`` and ``y: bool = False``, with or without ``@dataclass``.  nki-library's mlp_tkg declares
    ``remainderIFused: int`` in ``MLPTKGConstantsDimensionSizes`` and never passes it; a kernel reads such a field
    as None, and the values it computes from the others are NumPy's."""
    import dataclasses

    @dataclasses.dataclass
    class Dims(nl.NKIObject):
        rows: int
        unused: int
        cols: int
        scale: float = 2.0

    class Plain(nl.NKIObject):
        rows: int
        scale: float = 3.0

        def __post_init__(self):
            self.twice = 2 * self.rows

    @dataclasses.dataclass
    class Own(nl.NKIObject):  # its own __init__ (nki-library's MLPParameters): its parameters, not the fields
        rows: int
        derived: int

        def __init__(self, rows: int, twice: bool = False):
            self.rows, self.derived = rows, (2 if twice else 1) * rows

    # a keyword of its own __init__ that is no field reaches __init__ (MLPParameters(normalization_type=...) built
    # its norm_params from the default and then had the keyword set beside it: every normalising mlp_tkg case
    # computed without its norm)
    assert (Own(3).rows, Own(3).derived, Own(rows=3, twice=True).derived) == (3, 3, 6)
    assert not hasattr(Own(rows=3, twice=True), "twice")
    with pytest.raises(TypeError):
        Own()
    d = Dims(128, cols=16)
    assert (d.rows, d.unused, d.cols, d.scale) == (128, None, 16, 2.0)
    p = Plain(64)
    assert (p.rows, p.scale, p.twice) == (64, 3.0, 128) and Dims(cols=4).rows is None

    @nki.jit
    def scaled(x):
        dims = Dims(rows=x.shape[0], cols=x.shape[1])
        assert dims.unused is None
        t = nl.ndarray((dims.rows, dims.cols), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=dims.scale)
        out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=t)
        return out

    x = RNG.standard_normal((128, 16)).astype(np.float32)
    np.testing.assert_array_equal(scaled(x), x * np.float32(2.0))
    with pytest.raises(TypeError, match="at most 2 positional arguments"):
        Plain(1, 2.0, 3)


def test_a_sub_kernel_runs_inline_with_the_guide_quoted_whether_decorated_for_trace_or_plainly():
    """nki-library 2.29_release decorates its blockwise-matmul sub-kernels ``@nki.jit(mode="trace")`` and calls them
    from moe_cte, and calls its plainly decorated attention_block_tkg from transformer_tkg and from its test's jit'd
    wrapper; AWS's migration guide (nki/migration/index.rst:1156, 1159) says to remove both decorators.  Either call
    runs as a plain function of the calling kernel, with a warning quoting the guide."""
    from nkisim.frontend.v06.adapters.known_issues import DocumentedRuleWarning

    with pytest.warns(DeprecationWarning):
        @nki.jit(mode="trace")
        def doubled(t):
            nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)

    @nki.jit
    def plain(t):
        nisa.tensor_scalar(dst=t, data=t, op0=nl.multiply, operand0=2.0)

    def outer(sub):
        @nki.jit
        def kernel(x):
            t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            sub(t)
            out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=t)
            return out

        return kernel

    x = RNG.standard_normal((128, 8)).astype(np.float32)
    with pytest.warns(DocumentedRuleWarning, match="This decorator needs to be removed for the new NKI Compiler"):
        np.testing.assert_array_equal(outer(doubled)(x), 2 * x)
    with pytest.warns(DocumentedRuleWarning, match="will need to be removed from sub-kernels"):
        np.testing.assert_array_equal(outer(plain)(x), 2 * x)


@nki.jit
def _bias_if_given(x, bias=None):
    """nki-library's ``if params.expert_params and params.expert_params.expert_index:``: an optional tensor tested
    for its presence by its truth value while tracing (a tensor is a reference, so it is true)."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=t, src=x)
    if bias:
        b = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=b, src=bias)
        nisa.tensor_tensor(dst=t, data1=t, data2=b, op=nl.add)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_an_optional_tensor_is_tested_by_its_truth_value():
    x = RNG.standard_normal((128, 32)).astype(np.float32)
    zero = np.zeros_like(x)  # a tensor of zeros is still a tensor that is there: true, like any reference
    np.testing.assert_array_equal(_bias_if_given(x, zero), x)
    bias = RNG.standard_normal((128, 32)).astype(np.float32)
    np.testing.assert_allclose(_bias_if_given(x, bias), x + bias, rtol=1e-6)
    np.testing.assert_array_equal(_bias_if_given(x), x)


def _pe_transpose_kernel(psum_dtype, is_transpose):
    @nki.jit
    def transpose(x):
        """nki-library's moe_cte block transpose: ``nc_matmul(is_transpose=True)`` of a bfloat16 tile against the
        identity into a PSUM tile of the input's dtype (bwmm_shard_on_I.py:776 on NeuronCore-v3)."""
        k, m = x.shape
        out = nl.ndarray((m, k), dtype=x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((k, m), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x)
        ident = nl.shared_identity_matrix(k, dtype=x.dtype)
        p = nl.ndarray((m, k), dtype=psum_dtype, buffer=nl.psum)
        nisa.nc_matmul(dst=p, stationary=t, moving=ident, is_transpose=is_transpose)
        r = nl.ndarray((m, k), dtype=x.dtype, buffer=nl.sbuf)
        nisa.tensor_copy(dst=r, src=p)
        nisa.dma_copy(dst=out, src=r)
        return out

    return transpose


@pytest.mark.parametrize("target", ["trn2", "trn3"])
def test_a_transpose_mode_matmul_writes_its_inputs_dtype_to_psum(monkeypatch: pytest.MonkeyPatch, target: str):
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)
    x = RNG.standard_normal((128, 96)).astype(ml_dtypes.bfloat16)
    got = _pe_transpose_kernel(nl.bfloat16, True)(x)
    np.testing.assert_array_equal(np.asarray(got).astype(np.float32), x.T.astype(np.float32))


def test_a_bfloat16_psum_dst_stays_refused_where_aws_documents_float32(monkeypatch: pytest.MonkeyPatch):
    x = RNG.standard_normal((128, 96)).astype(ml_dtypes.bfloat16)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn2")  # a plain matmul: float32 dst up to NeuronCore-v3
    with pytest.raises(Exception, match="'dst' of 'nc_matmul' has dtype bfloat16, expected one of the following "
                                        "dtypes: float32\\."):
        _pe_transpose_kernel(nl.bfloat16, False)(x)
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", "trn1")  # NeuronCore-v2 has no native transpose mode
    with pytest.raises(Exception, match="'dst' of 'nc_matmul' has dtype bfloat16"):
        _pe_transpose_kernel(nl.bfloat16, True)(x)


@pytest.mark.parametrize(("target", "exact"), [("trn1", False), ("trn2", True)])
def test_transpose_mode_moves_nan_and_inf_in_place_from_neuroncore_v3(monkeypatch: pytest.MonkeyPatch, target: str,
                                                                      exact: bool):
    """isa nc_matmul: "Starting NeuronCore-v3, turning on transpose mode ... enables bit-accurate data transpose, which
    can transpose tensors with NaN/Inf values properly"; NeuronCore-v2 multiplies by the identity, so a NaN spreads."""
    monkeypatch.setenv("NEURON_PLATFORM_TARGET_OVERRIDE", target)
    x = RNG.standard_normal((128, 96)).astype(np.float32)
    x[5, 7], x[9, 3] = np.nan, np.inf
    got = np.asarray(_pe_transpose_kernel(nl.float32, True)(x))
    if exact:
        np.testing.assert_array_equal(got, x.T)  # (NaN compares equal to NaN here)
    else:
        assert np.isnan(got[7]).all()  # 0 * NaN in every column of the NaN's row


BLOCKS, BLOCK = 6, 256


@nki.jit
def _blocks_by_index(tp, rows):
    """nki-library's moe_cte dynamic block loop (bwmm_shard_on_I.py:1240): ``token_position_to_id.reshape((N, B))``
    indexed by a block counter in SBUF (``scalar_offset``, ``indirect_dim=0``), one 128-token column at a time; and
    a gather of rows of a reshaped table by per-partition indices (``vector_offset``)."""
    out = nl.ndarray((BLOCKS, BLOCK), dtype=nl.int32, buffer=nl.shared_hbm)
    gathered = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.shared_hbm)
    by_block = tp.reshape((BLOCKS, BLOCK))
    block_idx = nl.ndarray((1, 1), buffer=nl.sbuf, dtype=nl.int32)
    nisa.memset(block_idx, value=2)
    for _ in nl.dynamic_range(2, nisa.register_alloc(5)):
        cols = nl.ndarray((128, 2), dtype=nl.int32, buffer=nl.sbuf)
        for b in range(2):
            nisa.dma_copy(dst=cols[0:128, b], src=by_block.ap(pattern=[[1, 128], [1, 1]], offset=128 * b,
                                                                scalar_offset=block_idx, indirect_dim=0))
        nisa.dma_copy(dst=out.ap([[1, 128], [128, 2]], scalar_offset=block_idx, indirect_dim=0), src=cols)
        nisa.tensor_scalar(dst=block_idx, data=block_idx, op0=nl.add, operand0=1)
    idx = nl.ndarray((128, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=rows)
    table = tp.reshape((BLOCKS * BLOCK // 8, 8))
    g = nl.ndarray((128, 8), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=table.ap([[8, 128], [1, 8]], vector_offset=idx, indirect_dim=0))
    gf = nl.ndarray((128, 8), dtype=nl.float32, buffer=nl.sbuf)
    nisa.tensor_copy(dst=gf, src=g)
    nisa.dma_copy(dst=gathered, src=gf)
    return out, gathered


def test_an_indirect_offset_steps_by_the_stride_of_the_reshaped_views_dimension():
    """language ap: "indirect_dim: dimension in self.shape whose stride scales the indirect scalar/vector offset":
    the reshape's row of BLOCK elements, not the flat storage's stride of one."""
    tp = (np.arange(BLOCKS * BLOCK, dtype=np.int32) * 7) % 1000
    rows = RNG.integers(0, BLOCKS * BLOCK // 8, size=(128, 1)).astype(np.int32)
    out, gathered = _blocks_by_index(tp, rows)
    np.testing.assert_array_equal(np.asarray(out)[2:5], tp.reshape(BLOCKS, BLOCK)[2:5])
    np.testing.assert_array_equal(gathered, tp.reshape(-1, 8)[rows[:, 0]].astype(np.float32))


@nki.jit
def _psum_tiles_into_columns(x):
    """output_projection_tkg's transposed store (2.29_release, ``B * S > F_MAX``): each ``[P, F]`` tile copied into
    its columns of a wider SBUF tile through 3-D patterns ending in ``[0, 1]``, ``[[F, P], [1, F], [0, 1]]``."""
    p, w = x.shape
    f = w // 2
    wide = nl.ndarray((p, w), dtype=x.dtype, buffer=nl.sbuf)
    for j in range(2):
        t = nl.ndarray((p, f), dtype=x.dtype, buffer=nl.sbuf)
        nisa.dma_copy(dst=t, src=x[:, j * f:(j + 1) * f])
        nisa.tensor_copy(dst=wide.ap(pattern=[[w, p], [1, f], [0, 1]], offset=(1 - j) * f),
                         src=t.ap(pattern=[[f, p], [1, f], [0, 1]]))
    out = nl.ndarray((p, w), dtype=x.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=wide)
    return out


def test_a_pattern_ending_in_one_zero_step_element_addresses_every_partition():
    """A pattern of more than 8,192 elements ending in ``[0, 1]``: NumPy 2.4's ``unravel_index`` (numpy#31980) gave
    every partition past the 16th its first element, so output_projection_tkg's results were wrong there."""
    x = RNG.standard_normal((128, 1024)).astype(np.float32)
    np.testing.assert_array_equal(_psum_tiles_into_columns(x), np.concatenate([x[:, 512:], x[:, :512]], axis=1))


def test_a_view_past_the_storage_is_an_error_only_where_an_instruction_uses_it():
    """output_projection_tkg (2.29_release) builds the stationary view of an h_2 index past H_2, then skips the
    matmul (``if h_2_idx < cfg.h_2_size``): the compiler accepts the unused view; a used one stays refused."""

    def kernel(use: bool):
        @nki.jit
        def body(x):
            t = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.sbuf)
            nisa.dma_copy(dst=t, src=x)
            past = t.ap(pattern=[[8, 4], [2, 4]], offset=1 + 1)  # its last element is one past the storage
            if use:
                nisa.tensor_copy(dst=t[:, 0:4], src=past)
            out = nl.ndarray((4, 8), dtype=x.dtype, buffer=nl.shared_hbm)
            nisa.dma_copy(dst=out, src=t)
            return out

        return body

    x = RNG.standard_normal((4, 8)).astype(np.float32)
    np.testing.assert_array_equal(kernel(False)(x), x)
    with pytest.raises(IndexError, match="addresses elements"):
        kernel(True)(x)


@nki.jit
def _expert_weights(w, expert):
    """bwmm_shard_on_block's weight load (2.29_release): one expert's rows through ``.ap(scalar_offset=tile)``,
    skipped (``oob_mode.skip``) for a block whose expert index is past the experts (a padding block)."""
    e, h, g, i = w.shape
    idx = nl.ndarray((1, 1), dtype=nl.int32, buffer=nl.sbuf)
    nisa.dma_copy(dst=idx, src=expert)
    t = nl.ndarray((h, g, i), dtype=w.dtype, buffer=nl.sbuf)
    nisa.memset(dst=t, value=7.0)
    nisa.dma_copy(dst=t, src=w.ap(pattern=[[g * i, h], [i, g], [1, i]], offset=0, scalar_offset=idx),
                  oob_mode=nisa.oob_mode.skip)
    out = nl.ndarray((h, g, i), dtype=w.dtype, buffer=nl.shared_hbm)
    nisa.dma_copy(dst=out, src=t)
    return out


def test_a_scalar_offset_past_the_tensor_skips_the_transfer_under_oob_mode_skip():
    """isa dma_copy ``oob_mode``: "``oob_mode.skip``: Silently skips any operations involving out-of-bounds
    indices".  The single index of a scalar-offset view was not clamped with the masked-off elements, so NumPy's
    IndexError stopped the kernel (nki-library 2.29_release, test_moe_cte SHARD_ON_BLOCK)."""
    w = RNG.standard_normal((4, 8, 2, 6)).astype(np.float32)
    np.testing.assert_array_equal(_expert_weights(w, np.array([[2]], np.int32)), w[2])
    np.testing.assert_array_equal(_expert_weights(w, np.array([[4]], np.int32)), np.full((8, 2, 6), 7.0, np.float32))


@nki.jit
def _cache_update(cache, update_idx, v):
    """attention_block_tkg's flat KV-cache update (2.29_release): the (B, S, D) cache reshaped to (B * S, D) and
    written at row ``update_idx[b] + b * S`` of partition b through ``.ap(vector_offset=rows)``."""
    b, s, d = cache.shape
    rows = nl.ndarray((b, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.dma_copy(rows, update_idx)
    batch = nl.ndarray((b, 1), dtype=nl.uint32, buffer=nl.sbuf)
    nisa.iota(batch, [[0, 1]], offset=0, channel_multiplier=s)
    nisa.tensor_tensor(rows, rows, batch, nl.add)
    t = nl.ndarray((b, d), dtype=v.dtype, buffer=nl.sbuf)
    nisa.dma_copy(t, v)
    nisa.dma_copy(dst=cache.reshape((b * s, d)).ap(pattern=[[1, b], [d, 1], [1, d]], offset=0, vector_offset=rows,
                                                   indirect_dim=0),
                  src=t.ap(pattern=[[d, b], [d, 1], [1, d]]))
    return cache


def test_a_vector_offset_selects_among_the_rows_of_the_reshaped_views_dimension():
    """The index of ``.ap(vector_offset=)`` on a reshape is bounded by the reshape's rows (B * S), not by the
    storage's first dimension (B): every index past B was refused as out of bounds."""
    cache = np.zeros((4, 64, 8), np.float32)
    update = np.array([[5], [60], [0], [33]], np.uint32)
    v = RNG.standard_normal((4, 8)).astype(np.float32)
    ref = cache.copy()
    ref[np.arange(4), update[:, 0]] = v
    np.testing.assert_array_equal(_cache_update(cache.copy(), update, v), ref)
