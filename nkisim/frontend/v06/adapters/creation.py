"""``nki.language``'s tensor creation (NKI 0.6): ``nl.ndarray`` (with ``address=`` placement), ``nl.zeros`` & co,
``nl.rand`` / ``nl.random_seed``, and the shared constants.  Each calls the op registry's allocation of the same
name; buffers are the ``nl.sbuf`` / ``nl.psum`` / ``nl.hbm`` / ``nl.shared_hbm`` objects (strings are refused since
NKI 0.3)."""

from __future__ import annotations

import builtins
import os
from typing import Any

import numpy as np

from nkisim.core.buffers import Buffer, ModAlloc, sbuf
from nkisim.core.context import current as _current
from nkisim.core.dtypes import uint8
from nkisim.frontend.v06.adapters import binding as _b
from nkisim.frontend.v06.adapters.errors import error as _error
from nkisim.frontend.v06.adapters.tensor import NkiTensor


def _family(buffer: Any) -> str:
    if isinstance(buffer, str):
        # rule: buffer.string
        raise _error("err_string_buffer", f"buffer {buffer!r}: NKI 0.6 takes buffers as nl.sbuf, nl.psum, nl.hbm or "
                                          f"nl.shared_hbm, not strings (NKI 0.3 dropped string buffer names)")
    if not isinstance(buffer, Buffer):
        # rule: python.argument_type
        raise TypeError(f"expected a buffer (nl.sbuf, nl.psum, nl.hbm, nl.shared_hbm), got {buffer!r}")
    return buffer.family


def _tile(x: Any, api: str, pname: str = "x") -> Any:
    return _b.tensor(x, api, pname)


def _buffer(buffer: Any) -> Buffer:
    _family(buffer)
    return buffer


def ndarray(shape: Any, dtype: Any, buffer: Any = sbuf, name: Any = "", address: Any = None) -> NkiTensor:
    """``nl.ndarray``: a new, uninitialised tensor.  ``address=(partition, free byte offset)`` places an SBUF or PSUM
    tensor explicitly: tensors whose bytes overlap share them (as on the device); a PSUM tensor starts a bank."""
    shape = _shape(shape)
    buf = _buffer(buffer)
    if address is not None:
        buf = _placed(buf, shape, address)
    return _b.wrap(_b.call("nl.ndarray", shape, _b.dtype(dtype, "ndarray"), buffer=buf, name=name))


def _placed(buffer: Buffer, shape: tuple[int, ...], address: Any) -> Buffer:
    """The buffer of an explicitly placed tensor (``address=``), after the documented placement rules."""

    if _family(buffer) == "hbm":
        # rule: ndarray.address
        raise _error("err_operand_type", "nl.ndarray(address=...) places SBUF or PSUM tensors only")
    if not (isinstance(address, tuple) and len(address) == 2 and builtins.all(isinstance(a, int) and not isinstance(a, builtins.bool)
                                                                      and a >= 0 for a in address)):
        # rule: ndarray.address
        raise _error("err_operand_type", f"address must be (partition offset, free byte offset), got {address!r}")
    part, free = address
    n = shape[0]
    tgt = _current("ndarray").target
    quadrant = tgt.limits.quadrant_partitions
    starts = (0,) if n > 2 * quadrant else tuple(range(0, tgt.partitions, quadrant * (2 if n > quadrant else 1)))
    if part not in starts:
        # rule: ndarray.address
        raise _error("err_operand_type", f"a tensor of {n} partitions starts at partition {' or '.join(map(str, starts))}"
                                         f", not {part}")
    if _family(buffer) == "psum" and free % tgt.psum_bank_bytes:
        # rule: ndarray.psum_bank
        raise _error("err_operand_type", f"a PSUM tensor must start at a bank boundary (a multiple of "
                                         f"{tgt.psum_bank_bytes} bytes), not byte {free}")
    return Buffer(buffer.space, ModAlloc(buffer.space, base_addr=free, base_partition=part))


def _shape(shape: Any) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def zeros(shape: Any, dtype: Any, buffer: Any = sbuf, name: Any = "") -> NkiTensor:
    return _b.wrap(_b.call("nl.zeros", _shape(shape), _b.dtype(dtype, "zeros"), buffer=_buffer(buffer), name=name))


def ones(shape: Any, dtype: Any, buffer: Any = sbuf, name: Any = "") -> NkiTensor:
    return _b.wrap(_b.call("nl.ones", _shape(shape), _b.dtype(dtype, "ones"), buffer=_buffer(buffer), name=name))


def full(shape: Any, fill_value: Any, dtype: Any, buffer: Any = sbuf, name: Any = "") -> NkiTensor:
    return _b.wrap(_b.call("nl.full", _shape(shape), fill_value, _b.dtype(dtype, "full"), buffer=_buffer(buffer),
                           name=name))


def zeros_like(x: Any, dtype: Any = None, buffer: Any = None, name: Any = "") -> NkiTensor:
    return zeros(x.shape, x.dtype if dtype is None else dtype, sbuf if buffer is None else buffer, name)


def empty_like(x: Any, dtype: Any = None, buffer: Any = None, name: Any = "") -> NkiTensor:
    return ndarray(x.shape, x.dtype if dtype is None else dtype, x.buffer if buffer is None else buffer, name)


def rand(shape: Any, dtype: Any, buffer: Any = sbuf, name: Any = "") -> NkiTensor:
    """``nl.rand``: uniform values in [0, 1) on ``buffer`` ("sbuf, psum, hbm", AWS's docs).  The generators write
    SBUF; a PSUM tensor is filled by a Vector-engine copy of them, an HBM one by a DMA (the instructions an NKI
    kernel would write; AWS's docs do not say which the compiler emits)."""
    values = _b.wrap(_b.call("nl.rand", _shape(shape), _b.dtype(dtype, "rand")))
    family = _family(buffer)
    if family == "sbuf":
        return values
    out = ndarray(shape, dtype, buffer, name)
    if family == "psum":
        _b.call("nisa.tensor_copy", _tile(values, "rand"), dst=_tile(out, "rand"))
    else:
        _b.call("nisa.dma_copy", dst=_tile(out, "rand"), src=_tile(values, "rand"))
    return out


def random_seed(seed: Any) -> None:
    """``nl.random_seed``: seed ``nl.rand`` from a ``[1, 1]`` SBUF/PSUM tensor (NKI 0.6 takes no Python int)."""
    t = _tile(seed, "random_seed", "seed")
    if seed.size != 1 or not seed.on_chip:
        # rule: random_seed.shape
        raise _error("err_operand_type", f"'seed' of 'random_seed' must be a [1, 1] tensor in SBUF or PSUM, got shape "
                                         f"{list(seed.shape)} in {seed.buffer}")
    _b.call("nl.random_seed", t)


def shared_constant(constant: Any) -> NkiTensor:
    """``nl.shared_constant``: a ``shared_hbm`` tensor holding ``constant`` (an array or a ``.npy`` path)."""
    if isinstance(constant, (str, os.PathLike)):
        constant = np.load(constant)
    return _b.wrap(_b.call("nl.shared_constant", np.asarray(constant)))


def shared_identity_matrix(n: Any, dtype: Any = uint8, dst: Any = None) -> NkiTensor:
    """``nl.shared_identity_matrix``: an ``n x n`` identity in SBUF (into ``dst`` when given)."""
    eye = _b.wrap(_b.call("nl.shared_identity_matrix", int(n), _b.dtype(dtype, "shared_identity_matrix")))
    out = ndarray((int(n), int(n)), dtype) if dst is None else dst
    _b.call("nisa.dma_copy", dst=_tile(out, "shared_identity_matrix", "dst"), src=eye.lower())
    return out


for _name, _fn in list(globals().items()):
    if callable(_fn) and getattr(_fn, "__module__", None) == __name__ and not isinstance(_fn, type) \
            and not _name.startswith("_"):
        _fn.__qualname__ = f"nki.language.{_name}"
