"""NumPy drivers for AWS's NKI 0.6 example kernels (``nki/examples`` of the aws-neuron-sdk docs source).

AWS drives most of these kernels from torch_xla or JAX; here each kernel is imported unmodified from a copy of
the clone's ``nki/examples`` folder, called with NumPy inputs on the simulator and checked against a NumPy
reference written for this driver.  Examples whose own ``__main__`` block already runs the kernel on NumPy
inputs and asserts the result are run as scripts, as AWS ships them.  Nothing of AWS's code is copied into
this repository; ``bench/conformance.py --aws-examples DIR`` runs every case in its own process:

    python bench/aws_examples06.py EXAMPLES_DIR CASE     # one case (exit 0: passed)
    python bench/aws_examples06.py --list                # the cases, and the files left out and why
"""

from __future__ import annotations

import importlib.util
import os
import runpy
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

#: example files that are not runnable kernels, and why they are left out
EXCLUDED = {
    "layout-loop.py": "a documentation fragment: undefined names (i_f), not valid as a program",
    "layout-dynamic-loop.py": "a documentation fragment: undefined name k and a missing parenthesis",
    "getting_started_torch.py": "a torch_xla driver (needs a Neuron device); its kernel runs in baremetal_add",
    "getting_started_jax.py": "a JAX driver (needs a Neuron device); its kernel runs in baremetal_add",
    "*_torch.py / *_jax.py": "framework drivers of the kernels below, which run here with NumPy drivers",
}


def _module(root: str, rel: str) -> Any:
    """Import ``rel`` (a file under the examples folder) as a module, its folder on ``sys.path``."""
    path = os.path.join(root, rel)
    sys.path.insert(0, os.path.dirname(path))
    name = "aws_example_" + os.path.splitext(os.path.basename(path))[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _script(rel: str) -> Callable[[str], None]:
    """Run the example as a script: its ``__main__`` block computes on NumPy and asserts against NumPy."""

    def run(root: str) -> None:
        path = os.path.join(root, rel)
        cwd = os.getcwd()
        os.chdir(os.path.dirname(path))
        try:
            sys.argv = [path]
            runpy.run_path(path, run_name="__main__")
        finally:
            os.chdir(cwd)

    return run


def _rng() -> np.random.Generator:
    return np.random.default_rng(0)


def _bf16() -> Any:
    import ml_dtypes

    return ml_dtypes.bfloat16


def _close(got: Any, want: np.ndarray, rtol: float = 1e-5, atol: float = 1e-6) -> None:
    np.testing.assert_allclose(np.asarray(got, dtype=np.float32), want.astype(np.float32), rtol=rtol, atol=atol)


def baremetal_add(root: str) -> None:
    mod = _module(root, "getting_started_baremetal.py")
    a = _rng().standard_normal((4, 3)).astype(np.float16)
    b = np.ones((4, 3), np.float16)
    _close(mod.nki_tensor_add_kernel(a, b), (a.astype(np.float32) + 1).astype(np.float16), 1e-3)


def tensor_addition(root: str) -> None:
    mod = _module(root, os.path.join("tensor_addition", "tensor_addition_nki_kernels.py"))
    a, b = _rng().standard_normal((2, 256, 1024)).astype(np.float32)
    np.testing.assert_array_equal(mod.nki_tensor_add(a, b), a + b)


def _matmul(kernel: str, k: int, m: int, n: int) -> Callable[[str], None]:
    def run(root: str) -> None:
        mod = _module(root, os.path.join("matrix_multiplication", "matrix_multiplication_nki_kernels.py"))
        bf16 = _bf16()
        lhs_t = _rng().random((k, m)).astype(bf16)
        rhs = _rng().random((k, n)).astype(bf16)
        want = lhs_t.astype(np.float32).T @ rhs.astype(np.float32)
        _close(getattr(mod, kernel)(lhs_t, rhs), want, rtol=1e-2, atol=1e-4)

    return run


def transpose2d(root: str) -> None:
    mod = _module(root, os.path.join("transpose2d", "transpose2d_nki_kernels.py"))
    p, rows, cols = 8, 4, 6
    a = _rng().integers(-100, 100, (p, rows * cols)).astype(np.int8)
    want = a.reshape(p, rows, cols).transpose(0, 2, 1).reshape(p, rows * cols)
    np.testing.assert_array_equal(mod.tensor_transpose2D_kernel_(a, (rows, cols)), want)


def avgpool(root: str) -> None:
    mod = _module(root, os.path.join("average_pool2d", "average_pool2d_nki_kernels.py"))
    c, h, w, k = 16, 12, 8, 2
    a = _rng().standard_normal((c, h, w)).astype(np.float32)
    want = a.reshape(c, h // k, k, w // k, k).mean(axis=(2, 4))
    _close(mod.tensor_avgpool_kernel(a, k), want)


def split_columns(root: str) -> None:
    mod = _module(root, "index-case-1.py")
    a = _rng().standard_normal((64, 9)).astype(_bf16())
    even, odd = mod.tensor_split_kernel_(a)
    np.testing.assert_array_equal(even, a[:, 0::2])
    np.testing.assert_array_equal(odd, a[:, 1::2])


def maxpool(root: str) -> None:
    mod = _module(root, "index-case-3.py")
    c, h, w, k = 8, 6, 9, 3
    a = _rng().standard_normal((c, h, w)).astype(_bf16())
    want = a.astype(np.float32).reshape(c, h // k, k, w // k, k).max(axis=(2, 4))
    _close(mod.tensor_maxpool_kernel_(a, k), want)


def exp_tile(root: str) -> None:
    mod = _module(root, "layout-pass.py")
    a = _rng().standard_normal((128, 512)).astype(_bf16())
    _close(mod.tensor_exp_kernel_(a), np.exp(a.astype(np.float32)).astype(_bf16()), rtol=1e-2)


def too_many_partitions(root: str) -> None:
    """The negative example: 256 rows in one SBUF tile must be refused (the kernel also returns nothing)."""
    mod = _module(root, "layout-violation.py")
    try:
        mod.tensor_exp_kernel_(np.ones((256, 512), np.float32))
    except Exception as err:  # noqa: BLE001 - any refusal counts; the message must name the partition limit
        assert "128" in str(err) and "partition" in str(err), str(err)
        return
    raise AssertionError("a 256-partition tile was accepted")


def _ssm(delta: np.ndarray, u: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """The selective-scan recurrence in float64: h[t] = exp(delta[t] A) h[t-1] + delta[t] B[t] u[t]; y = C.h."""
    d, uu, aa, bb, cc = (x.astype(np.float64) for x in (delta, u, a, b, c))
    decay = np.exp(d[:, :, None, :] * aa[None, :, :, None])  # (batch, channels, state, seq)
    drive = d[:, :, None, :] * bb[:, None, :, :] * uu[:, :, None, :]
    h = np.zeros(decay.shape[:-1])
    out = np.empty(d.shape)
    for t in range(d.shape[-1]):
        h = decay[..., t] * h + drive[..., t]
        out[..., t] = (cc[:, None, :, t] * h).sum(axis=-1)
    return out


def _mamba(version: str) -> Callable[[str], None]:
    def run(root: str) -> None:
        mod = _module(root, os.path.join("fused_mamba", "mamba_nki_kernels.py"))
        batch, channels, state, seq = 1, 256, 4, 1024
        g = _rng()
        delta = (g.random((batch, channels, seq)) * 0.1).astype(np.float32)
        u = g.standard_normal((batch, channels, seq)).astype(np.float32)
        a = -g.random((channels, state)).astype(np.float32)
        b = g.standard_normal((batch, state, seq)).astype(np.float32)
        c = g.standard_normal((batch, state, seq)).astype(np.float32)
        _close(getattr(mod, f"mamba_{version}")(delta, u, a, b, c), _ssm(delta, u, a, b, c), rtol=1e-3, atol=1e-3)

    return run


#: case name -> driver; every case imports or runs AWS's file unmodified and checks against NumPy
CASES: dict[str, Callable[[str], None]] = {
    "simulate/nki_simulate_example.py (script)": _script(os.path.join("simulate", "nki_simulate_example.py")),
    "getting_started_baremetal.py (script)": _script("getting_started_baremetal.py"),
    "getting_started_baremetal.py nki_tensor_add_kernel": baremetal_add,
    "tensor_addition nki_tensor_add": tensor_addition,
    "matrix_multiplication nki_matmul_basic_": _matmul("nki_matmul_basic_", 128, 64, 512),
    "matrix_multiplication nki_matmul_tiled_": _matmul("nki_matmul_tiled_", 1024, 512, 1024),
    "matrix_multiplication nki_matmul_hoist_load_": _matmul("nki_matmul_hoist_load_", 1024, 512, 1024),
    "matrix_multiplication nki_matmul_block_free_dimension_": _matmul("nki_matmul_block_free_dimension_", 1024, 512,
                                                                      2048),
    "matrix_multiplication nki_matmul_fully_optimized_": _matmul("nki_matmul_fully_optimized_", 1024, 4096, 2048),
    "transpose2d (script)": _script(os.path.join("transpose2d", "transpose2d_nki_kernels.py")),
    "transpose2d tensor_transpose2D_kernel_": transpose2d,
    "average_pool2d (script)": _script(os.path.join("average_pool2d", "average_pool2d_nki_kernels.py")),
    "average_pool2d tensor_avgpool_kernel": avgpool,
    "index-case-1.py tensor_split_kernel_": split_columns,
    "index-case-3.py tensor_maxpool_kernel_": maxpool,
    "layout-pass.py tensor_exp_kernel_": exp_tile,
    "layout-violation.py (must be refused)": too_many_partitions,
    "fused_mamba mamba_v1": _mamba("v1"),
    "fused_mamba mamba_v2": _mamba("v2"),
    "fused_mamba mamba_v3": _mamba("v3"),
}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--list":
        for name in CASES:
            print(name)
        for name, why in EXCLUDED.items():
            print(f"(left out) {name}: {why}")
        return 0
    root, case = argv
    import nkisim

    nkisim.install(force=True)
    CASES[case](os.path.abspath(root))
    print(f"PASS {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
