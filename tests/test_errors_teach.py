"""Errors that teach (issue 22, scope 3): four mistakes students make, each told at the line that is wrong and
with what to write instead, in a plain launch and in ``check()``.

* ``acc = nl.matmul(...)`` in the K loop where ``acc += nl.matmul(...)`` was meant;
* ``np.add`` (any NumPy function) on tiles;
* ``if t == 0:`` on an ``nl.affine_range`` variable: undefined in the legacy compiler (its body is traced once)
  though not one of its errors, so warned at the line, by the simulator and by ``check()``;
* a kernel that passes the small public cases but fails the timed run (one load too big for SBUF): check() must
  not say "passed".
"""

from __future__ import annotations

import linecache
import textwrap
import traceback
from pathlib import Path

import numpy as np
import pytest
from course_testing import HEADER, write

import nkisim
from nkilab import check
from nkisim.api import affine_branches
from nkisim.core.errors import NKIError
from nkisim.core.indexing import AffineBranchWarning

nkisim.install()
import neuronxcc.nki as nki  # noqa: E402
import neuronxcc.nki.language as nl  # noqa: E402

HERE = str(Path(__file__).resolve())


def line_of(fn, marker: str) -> int:
    """The line of ``fn``'s source (this file) that ends with ``marker``."""
    import inspect

    fn = getattr(fn, "func", fn)
    lines, start = inspect.getsourcelines(fn)
    hits = [start + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, hits
    return hits[0]


# --------------------------------------------------------------------------- acc = nl.matmul instead of +=
@nki.jit
def matmul_rebinds(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, 0:128])
        rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, 0:512])
        res_psum = nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)  # ASSIGN
    res_sbuf = nl.copy(res_psum, dtype=result.dtype)  # USE
    nl.store(result[0:128, 0:512], value=res_sbuf)
    return result


def test_matmul_assigned_instead_of_accumulated_is_blamed_on_the_assignment():
    rng = np.random.default_rng(0)
    with pytest.raises(NKIError) as info:
        matmul_rebinds(rng.random((256, 128), dtype=np.float32), rng.random((256, 512), dtype=np.float32))
    err = info.value
    assert err.error_id == "err_local_variable_used_out_of_scope"
    assign, use = line_of(matmul_rebinds, "# ASSIGN"), line_of(matmul_rebinds, "# USE")
    assert err.nki_location == (HERE, assign)
    assert (err.filename, err.lineno) == (HERE, assign)  # what Python prints above the message
    text = str(err)
    assert f"line {assign} assigns 'res_psum' a new PSUM tile in every iteration" in text
    assert f"after the loop (line {use})" in text
    assert "res_psum += nl.matmul(...)" in text
    assert "res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)" in text
    # not the generic advice for a tile used out of its loop (which would tell them to write res_psum[...] = ...)
    assert "update it in place" not in text


def test_tile_used_after_its_loop_keeps_the_generic_advice():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        for _i in nl.affine_range(1):
            t = nl.load(a)
        nl.store(out, value=t)  # USE
        return out

    with pytest.raises(NKIError) as info:
        k(np.ones((128, 4), np.float32))
    assert info.value.nki_location == (HERE, line_of(k, "# USE"))
    assert "Allocate it before the loop and update it in place with 't[...] = ...'" in str(info.value)


MATMUL_REBINDS = """
@nki.jit
def matmul_tiled(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        for n in nl.affine_range(N // 512):
            res_psum = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                lhsT_tile = nl.load(lhsT[k * 128:(k + 1) * 128, m * 128:(m + 1) * 128])
                rhs_tile = nl.load(rhs[k * 128:(k + 1) * 128, n * 512:(n + 1) * 512])
                res_psum = nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)
            res_sbuf = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * 128:(m + 1) * 128, n * 512:(n + 1) * 512], value=res_sbuf)
    return result
"""


@pytest.mark.processes
def test_check_shows_the_assignment_line_for_matmul(tmp_path, capsys):
    path = write(tmp_path, "matmul_tiled.py", MATMUL_REBINDS)
    lines = Path(path).read_text().splitlines()
    assign = next(i for i, t in enumerate(lines, 1) if "res_psum = nl.matmul" in t)
    assert not check("matmul_tiled", path).passed
    out = capsys.readouterr().out
    # the line and the code shown are the assignment's, not the copy's after the loop
    assert f"matmul_tiled.py line {assign} (`res_psum = nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)`)" in out
    assert "res_psum += nl.matmul(...)" in out
    assert "(`res_sbuf = nl.copy" not in out


# --------------------------------------------------------------------------- NumPy functions on tiles
@pytest.mark.parametrize("call, suggestion", [
    ("np.add(x, y)", "nl.add(...) (or the operator: x + y)"),
    ("np.multiply(x, y)", "nl.multiply(...) (or the operator: x * y)"),
    ("np.exp(x)", "nl.exp(...)"),
    ("np.absolute(x)", "nl.abs(...)"),
    ("np.sum(x, axis=1)", "nl.sum(...)"),
    ("np.add.reduce(x, axis=1)", "nl.sum(...)"),
    ("np.dot(x, y)", "nl.matmul(...)"),
])
def test_numpy_function_on_a_tile_names_the_nki_call(call, suggestion):
    name = call.split("(")[0]
    src = textwrap.dedent(f"""
        def k(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            x = nl.load(a)
            y = nl.load(b)
            z = {call}
            nl.store(out, value=z)
            return out
    """)
    path = Path(HERE).parent / f"_np_on_tile_{abs(hash(call))}.py"
    scope = {"nl": nl, "np": np}
    code = compile(src, str(path), "exec")
    linecache.cache[str(path)] = (len(src), None, src.splitlines(True), str(path))
    exec(code, scope)
    kernel = nki.jit(scope["k"])
    with pytest.raises(TypeError) as info:
        kernel(np.ones((128, 4), np.float32), np.ones((128, 4), np.float32))
    text = str(info.value)
    assert text.startswith(f"{name} cannot compute on an NKI tile"), text
    assert suggestion in text, text
    assert "Could not convert" not in text
    # the innermost frame that is not the simulator's is the student's call
    frames = [f for f in traceback.extract_tb(info.value.__traceback__) if "nkisim" not in f.filename]
    assert (frames[-1].filename, frames[-1].lineno) == (str(path), 6)


@nki.jit
def numpy_scalars_on_the_left(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = np.float32(2.0) * x + np.float32(1.0)
    z = np.float32(10.0) - y
    w = np.float32(4.0) / x
    m = np.float32(2.0) > x
    nl.store(out, value=z + w + nl.multiply(m, 100.0, dtype=a.dtype))
    return out


def test_numpy_scalar_operators_on_tiles_still_compute():
    """``np.float32(2) * t`` goes through NumPy's operator (hence __array_ufunc__), and is the tile's own."""
    a = np.random.default_rng(1).uniform(0.5, 3.0, (128, 8)).astype(np.float32)
    got = numpy_scalars_on_the_left(a)
    want = (10.0 - (2.0 * a + 1.0)) + 4.0 / a + 100.0 * (2.0 > a)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.processes
def test_check_tells_np_add_to_use_nl_add(tmp_path, capsys):
    path = write(tmp_path, "vector_add_naive.py", """
        @nki.jit
        def vector_add_naive(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            x = nl.load(a)
            y = nl.load(b)
            nl.store(out, value=np.add(x, y))
            return out
        """, header="import numpy as np\n" + HEADER)
    assert not check("vector_add_naive", path).passed
    out = capsys.readouterr().out
    assert "`nl.store(out, value=np.add(x, y))`): np.add cannot compute on an NKI tile" in out
    assert "nl.add(...) (or the operator: x + y)" in out


# --------------------------------------------------------------------------- if on an affine_range variable
@nki.jit
def branches_on_affine(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        if t == 0:  # BRANCH
            x = nl.multiply(x, 2.0)
        nl.store(out[t * 128:(t + 1) * 128, :], value=x)
    return out


@nki.jit
def truth_of_affine(a):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        y = nl.multiply(x, 2.0) if t else x  # BRANCH
        nl.store(out[t * 128:(t + 1) * 128, :], value=y)
    return out


@pytest.mark.parametrize("kernel", [branches_on_affine, truth_of_affine])
def test_branch_on_affine_range_variable_is_warned_at_the_line(kernel):
    """Undefined in the legacy compiler (the body is traced once), not one of its errors: warned at the student's
    line, naming the variable and what to write instead; the result is what an unrolled loop computes."""
    a = np.arange(256 * 4, dtype=np.float32).reshape(256, 4)
    with pytest.warns(AffineBranchWarning) as caught:
        got = kernel(a)
    w = caught[0]
    assert (w.filename, w.lineno) == (HERE, line_of(kernel, "# BRANCH"))
    text = str(w.message)
    assert text.startswith("control flow depends on the nl.affine_range loop variable `t`")
    assert "undefined behaviour" in text and "handle the special iteration before or after the loop" in text
    want = a.copy()
    if kernel is branches_on_affine:
        want[:128] *= 2
    else:
        want[128:] *= 2
    np.testing.assert_array_equal(got, want)


@pytest.mark.processes
def test_check_warns_about_a_branch_on_the_loop_variable(tmp_path, capsys):
    path = write(tmp_path, "tiled_add.py", """
        @nki.jit
        def tiled_add(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            for t in nl.affine_range(a.shape[0] // 128):
                x = nl.load(a[t * 128:(t + 1) * 128, :])
                y = nl.load(b[t * 128:(t + 1) * 128, :])
                if t == 0:
                    z = nl.add(x, y)
                else:
                    z = nl.add(y, x)
                nl.store(out[t * 128:(t + 1) * 128, :], value=z)
            return out
        """)
    line = next(i for i, text in enumerate(Path(path).read_text().splitlines(), 1) if "if t == 0" in text)
    check("tiled_add", path)
    out = capsys.readouterr().out
    assert (f"  Warning: line {line} (`if t == 0:`): control flow depends on the nl.affine_range loop variable `t`: "
            "the compiler traces an nl.affine_range body once") in out
    # a kernel object gets the same warning, with the line in its file
    assert check("tiled_add", branches_on_affine_as_tiled_add) is not None
    out = capsys.readouterr().out
    assert f"Warning: line {line_of(branches_on_affine_as_tiled_add, '# BRANCH')} (`if t == 0:  # BRANCH`)" in out


@nki.jit
def branches_on_affine_as_tiled_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for t in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[t * 128:(t + 1) * 128, :])
        if t == 0:  # BRANCH
            x = nl.add(x, 0.0)
        nl.store(out[t * 128:(t + 1) * 128, :], value=nl.add(x, nl.load(b[t * 128:(t + 1) * 128, :])))
    return out


def test_affine_branch_scan_finds_only_branches_on_the_loop_variable():
    src = textwrap.dedent("""
        def k(a, n):
            for i in nl.affine_range(4):
                if i == 0:
                    pass
                y = 1 if i else 2
                if n > 3:
                    pass
                for j in nl.sequential_range(2):
                    if j == 0:
                        pass
            for s in nl.static_range(2):
                if s:
                    pass
    """).lstrip("\n")
    found = affine_branches(src, first_line=10)  # the def is line 10
    assert [(b.line, b.code, b.variable) for b in found] == [(12, "if i == 0:", "i"), (14, "y = 1 if i else 2", "i")]


def test_loop_variables_that_are_not_branched_on_still_work():
    """Masks, min() over a loop index, sequential_range and static_range branches are untouched."""
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        n = a.shape[0]
        i_p = nl.arange(128)[:, None]
        i_f = nl.arange(a.shape[1])[None, :]
        for t in nl.affine_range((n + 127) // 128):
            x = nl.load(a[t * 128 + i_p, i_f], mask=(t * 128 + i_p < n))
            nl.store(out[t * 128 + i_p, i_f], value=x, mask=(t * 128 + i_p < n))
        for s in nl.static_range(1):
            if s == 0:
                pass
        for q in nl.sequential_range(2):
            if q == 0:
                pass
        return out

    a = np.arange(200 * 4, dtype=np.float32).reshape(200, 4)
    np.testing.assert_array_equal(k(a), a)


# --------------------------------------------------------------------------- the timed run failed
@pytest.mark.processes
def test_check_does_not_say_passed_when_the_timed_run_fails(tmp_path, capsys):
    path = write(tmp_path, "vector_add_stream.py", """
        @nki.jit
        def vector_add_stream(a, b):
            out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
            nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
            return out
        """)
    result = check("vector_add_stream", path)
    out = capsys.readouterr().out
    assert all(c.verdict.ok for c in result.evaluation.cases)  # the small public cases do match
    assert not result.passed
    assert "Public checks passed" not in out
    assert "exceeds the" in out and "bytes available per partition" in out
    assert "Not passing yet: the public cases match, but the timed run on a, b: float32 [128, 65536] failed" in out
