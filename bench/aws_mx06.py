"""NumPy drivers for AWS's MX deep-dive kernels (``nki/deep-dives/src/mxfp-matmul`` of the aws-neuron-sdk docs
source): NeuronCore-v4's ``nc_matmul_mx``, ``quantize_mx`` and x4 packed dtypes, on the trn3 target.

AWS drives these kernels from torch_xla on a Trainium3 (``mx_toplevel.py``); here ``mx_kernels.py`` is imported
unmodified from a copy of the clone's folder and each kernel is called directly with NumPy inputs on the simulator,
with ``NEURON_PLATFORM_TARGET_OVERRIDE=trn3``.  Inputs and the expected results come from AWS's own helpers in
``mx_cpu_utils.py`` (``generate_stabilized_mx_data``, ``nc_matmul_mx_golden``, ``quantize_mx_golden``), compared as
``mx_toplevel.py`` compares them (``np.allclose``, rtol = atol = 5e-2).  The cases are the eight runs of
``mx_toplevel.py``'s ``__main__`` plus the same kernels with float8_e4m3fn.  Nothing of AWS's code is copied here;
``bench/conformance.py --aws-examples CLONE`` runs every case in its own process:

    python bench/aws_mx06.py MXFP_DIR CASE     # one case (exit 0: passed)
    python bench/aws_mx06.py --list            # the cases
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

#: the folder of the MX deep dive inside the docs source
FOLDER = os.path.join("nki", "deep-dives", "src", "mxfp-matmul")
#: mx_toplevel.py's tolerance (compare_and_print_results)
RTOL = ATOL = 5e-2
#: TensorE's largest tile (mx_toplevel.py: M, K, N = 128, 128, 512 in x4 elements)
M, K, N = 128, 128, 512


def _module(root: str, name: str) -> Any:
    path = os.path.join(root, name + ".py")
    if root not in sys.path:
        sys.path.insert(0, root)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def _x4(dtype: Any) -> Any:
    import ml_dtypes
    import nki.language as nl

    return {ml_dtypes.float8_e5m2: nl.float8_e5m2_x4, ml_dtypes.float8_e4m3fn: nl.float8_e4m3fn_x4,
            ml_dtypes.float4_e2m1fn: nl.float4_e2m1fn_x4}[dtype]


def _check(got: Any, want: np.ndarray) -> None:
    got = np.asarray(got).astype(np.float32)
    assert got.shape == want.shape, (got.shape, want.shape)
    ok = np.allclose(got, want.astype(np.float32), rtol=RTOL, atol=ATOL)
    assert ok, f"max |difference| {np.max(np.abs(got - want)):.4g} (mean {np.mean(np.abs(got - want)):.4g})"


def _offline(dtype_name: str) -> Callable[[str], None]:
    """``kernel_offline_quantized_mx_matmul``: host-quantised MX tiles loaded and multiplied."""

    def run(root: str) -> None:
        import ml_dtypes

        q = getattr(ml_dtypes, dtype_name)
        cpu, kernels = _module(root, "mx_cpu_utils"), _module(root, "mx_kernels")
        _, _, st, st_scale = cpu.generate_stabilized_mx_data(q, (K, M * 4))
        _, _, mv, mv_scale = cpu.generate_stabilized_mx_data(q, (K, N * 4))
        got = kernels.kernel_offline_quantized_mx_matmul(st, st_scale, mv, mv_scale, _x4(q))
        _check(got, cpu.nc_matmul_mx_golden(st, mv, st_scale, mv_scale, q, q))

    return run


def _on_device(stationary: str, moving: str) -> Callable[[str], None]:
    """``kernel_on_device_quantize_matmul_mx``: the moving tile quantised by ``quantize_mx`` on the device."""

    def run(root: str) -> None:
        import ml_dtypes

        qs, qm = getattr(ml_dtypes, stationary), getattr(ml_dtypes, moving)
        cpu, kernels = _module(root, "mx_cpu_utils"), _module(root, "mx_kernels")
        _, _, st, st_scale = cpu.generate_stabilized_mx_data(qs, (K, M * 4))
        mv_data, _, _, _ = cpu.generate_stabilized_mx_data(qm, (K, N * 4))
        mv_bf16 = mv_data.astype(ml_dtypes.bfloat16)
        got = kernels.kernel_on_device_quantize_matmul_mx(st, st_scale, mv_bf16, _x4(qs), _x4(qm))
        mv_q, mv_scale = cpu.quantize_mx_golden(mv_data, qm)
        _check(got, cpu.nc_matmul_mx_golden(st, mv_q, st_scale, mv_scale, qs, qm))

    return run


def _strided(dtype_name: str, use_tensor_copy: bool, packed_scales: bool) -> Callable[[str], None]:
    """``kernel_copy_strided_quantize_matmul_mx[_packed_scale]``: bf16 tiles laid out for MX by strided copies,
    quantised on the device, multiplied; checked against the plain product of the bf16 inputs."""

    def run(root: str) -> None:
        import ml_dtypes

        q = getattr(ml_dtypes, dtype_name)
        cpu, kernels = _module(root, "mx_cpu_utils"), _module(root, "mx_kernels")
        st, _, _, _ = cpu.generate_stabilized_mx_data(q, (K * 4, M))
        mv, _, _, _ = cpu.generate_stabilized_mx_data(q, (K * 4, N))
        kernel = kernels.kernel_copy_strided_quantize_matmul_mx_packed_scale if packed_scales \
            else kernels.kernel_copy_strided_quantize_matmul_mx
        got = kernel(st.astype(ml_dtypes.bfloat16), mv.astype(ml_dtypes.bfloat16), _x4(q), use_tensor_copy)
        _check(got, st.T @ mv)

    return run


#: case name -> driver (the first eight are mx_toplevel.py's __main__ runs, in its order)
CASES: dict[str, Callable[[str], None]] = {
    "offline_quantized_mx_matmul float8_e5m2": _offline("float8_e5m2"),
    "offline_quantized_mx_matmul float4_e2m1fn": _offline("float4_e2m1fn"),
    "on_device_quantize_matmul_mx float4_e2m1fn @ float8_e5m2": _on_device("float4_e2m1fn", "float8_e5m2"),
    "on_device_quantize_matmul_mx float8_e5m2 @ float8_e5m2": _on_device("float8_e5m2", "float8_e5m2"),
    "copy_strided tensor_copy float8_e5m2": _strided("float8_e5m2", True, False),
    "copy_strided dma float8_e5m2": _strided("float8_e5m2", False, False),
    "copy_strided tensor_copy packed_scale float8_e5m2": _strided("float8_e5m2", True, True),
    "copy_strided dma packed_scale float8_e5m2": _strided("float8_e5m2", False, True),
    "offline_quantized_mx_matmul float8_e4m3fn": _offline("float8_e4m3fn"),
    "on_device_quantize_matmul_mx float8_e4m3fn @ float8_e4m3fn": _on_device("float8_e4m3fn", "float8_e4m3fn"),
    "copy_strided tensor_copy float8_e4m3fn": _strided("float8_e4m3fn", True, False),
    "copy_strided dma packed_scale float8_e4m3fn": _strided("float8_e4m3fn", False, True),
}


def main(argv: list[str]) -> int:
    if argv and argv[0] == "--list":
        for name in CASES:
            print(name)
        return 0
    root, case = argv
    os.environ["NEURON_PLATFORM_TARGET_OVERRIDE"] = "trn3"  # the kernels are NeuronCore-v4 only
    import nkisim

    nkisim.install(force=True)
    np.random.seed(20)  # AWS's generators draw from NumPy's global generator
    root = os.path.abspath(root)
    if os.path.isdir(os.path.join(root, FOLDER)):
        root = os.path.join(root, FOLDER)
    CASES[case](root)
    print(f"PASS {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
