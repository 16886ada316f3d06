"""Converting kernel arguments in and results out (NumPy, torch CPU tensors, nki.typing placeholders)."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.buffers import Buffer
from nkisim.core.errors import nki_error
from nkisim.core.storage import storage
from nkisim.core.tensor import Tensor


class Placeholder:
    """``nt.tensor[[8192, 4096], nl.bfloat16]``: shape and dtype only (cost-only runs)."""

    def __init__(self, shape: Any, dtype: Any, mutable: bool = False) -> None:
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dt.normalize(dtype) if dtype is not None else dt.float32
        self.mutable = mutable

    def __repr__(self) -> str:
        return f"nt.tensor[{list(self.shape)}, {dt.name(self.dtype)}]"


class Mutable:
    """The annotation that makes a launch copy an array argument and let the kernel write it (``nki.trace``
    kernels write their parameters; a program records which of its inputs are such)."""

    mutable = True


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")


def torch_to_numpy(x: Any) -> np.ndarray:
    import torch

    x = x.detach()
    if x.device.type != "cpu":
        raise nki_error("err_unsupported_kernel_argument",
                        f"the simulator runs on the CPU: move tensor to the CPU first (got device {x.device})")
    if x.dtype == torch.bfloat16:
        return x.contiguous().view(torch.int16).numpy().view(dt.bfloat16)
    return x.numpy()


def numpy_to_torch(a: np.ndarray) -> Any:
    import torch

    if a.dtype == dt.bfloat16:
        return torch.from_numpy(np.ascontiguousarray(a).view(np.int16)).view(torch.bfloat16)
    if a.dtype in (dt.float8_e4m3, dt.float8_e5m2):
        return torch.from_numpy(a.astype(np.float32))
    return torch.from_numpy(np.ascontiguousarray(a))


def to_tensor(name: str, value: Any, annotation: Any = None, writable: bool = False,
              space: str = "shared_hbm") -> tuple[Any, bool]:
    """One kernel argument -> (kernel-side value, came_from_torch).

    ``writable``: the kernel may write the argument and the caller's array sees the writes (NKI 0.6, where AWS's
    simulator updates input arrays in place); otherwise it is read-only unless annotated mutable, which the
    kernel then writes on a copy.  ``space``: the HBM an array lands in (NKI 0.6 wraps a single-core launch's
    arrays as ``nl.hbm`` tensors, an LNC2 launch's as ``nl.shared_hbm``; legacy kernels see ``shared_hbm``)."""
    from_torch = False
    mutable = getattr(annotation, "mutable", False)
    if isinstance(value, Placeholder):
        t = Tensor(value.shape, value.dtype, Buffer(space), None, name)
        t.param = not (value.mutable or mutable or writable)
        t.argument = True
        t.written = True
        return t, False
    if _is_torch(value):
        value, from_torch = torch_to_numpy(value), True
    if isinstance(value, np.ndarray):
        if value.dtype == np.float64:
            raise nki_error("err_unsupported_kernel_argument",
                            f"argument '{name}' is float64, which NeuronCores do not support: pass "
                            f"{name}.astype(np.float32) (or bfloat16/float16)")
        d = dt.normalize(value.dtype)
        if d == np.dtype(np.int64) or d == np.dtype(np.uint64) or d not in dt.SUPPORTED:
            raise nki_error("err_unsupported_kernel_argument",
                            f"argument '{name}' has dtype {value.dtype}, which NKI does not support; use one of "
                            f"{', '.join(dt.name(x) for x in dt.SUPPORTED)}")
        data = np.ascontiguousarray(value)
        if mutable and not writable:
            data = data.copy()
        t = Tensor(data.shape, d, Buffer(space), data, name)
        t.param = not (mutable or writable)
        t.argument = True
        t.written = True
        return t, from_torch
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, np.ndarray) for v in value):
        raise nki_error("err_unsupported_kernel_argument",
                        f"argument '{name}' is a list of arrays; pass each array as its own kernel argument")
    return value, False


def bind(func: Any, args: tuple, kwargs: dict) -> inspect.BoundArguments:
    """Bind call arguments to the kernel signature with a clear message on a mismatch."""
    sig = inspect.signature(func)
    try:
        bound = sig.bind(*args, **kwargs)
    except TypeError as e:
        params = ", ".join(sig.parameters)
        raise TypeError(f"kernel {func.__name__}({params}) called with the wrong arguments: {e}") from None
    bound.apply_defaults()
    return bound


def from_tensor(value: Any, to_torch: bool, _handed_out: set[int] | None = None) -> Any:
    """Kernel result -> NumPy (or torch) arrays, preserving tuples/lists.

    The launch is over, so nothing writes a tensor the kernel made ever again: its storage is handed
    out as it is instead of copied (a copy of a large output costs as much as a few hundred simulated
    instructions).  A returned kernel input is the caller's own array, and a tensor returned twice
    would alias, so those two are copied.
    """
    handed_out = set() if _handed_out is None else _handed_out
    if isinstance(value, Tensor):
        data = storage(value)
        if data is None:
            return None
        root = value.root
        root.fill_pending()
        arr = np.array(data, copy=True) if root.param or root.uid in handed_out else data
        handed_out.add(root.uid)
        return numpy_to_torch(arr) if to_torch else arr
    if isinstance(value, (tuple, list)):
        return type(value)(from_tensor(v, to_torch, handed_out) for v in value)
    return value
