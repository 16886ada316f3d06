"""Operand values of a call, as plain JSON and back.

Grammar of an encoded value (``X`` an index expression, ``A`` an access):

- ``null``, booleans, integers, finite floats, strings, lists: themselves; ``{"float": "nan"|"inf"|"-inf"}``
- ``{"tuple": [...]}``, ``{"dict": [[key, value], ...]}``
- ``{"T": id}`` a tensor; ``{"W": id}`` its whole access (``t[...]``, which ops treat as the tensor itself);
  ``{"A": id, "c": [component, ...]}`` an access of tensor ``id``, one component per
  dimension: ``["int", X]``, ``["slice", X, X, step]``, ``["adv", X]``, ``["ind", A]``, ``["dyn", D]``
- ``{"X": const, "t": [[loop, coef], ...], "g": array | null, "affine": bool, "loops": [loop, ...]}`` an index
  expression: constant + loop terms + an arange/mgrid grid
- ``{"D": tile, "off": X}`` a position read from one tile element when the instruction runs
- ``{"slice": [a, b, c]}``, ``{"ds": [start, size]}``, ``{"ellipsis": 1}`` raw index keys
- ``{"dtype": name}``, ``{"np": dtype, "v": number}``, ``{"arr": k}``, ``{"par_dim": n}``
- ``{"M": ["cmp", op, X, X]}`` a mask predicate kept symbolic (``op`` one of ``< <= > >= == !=``), and
  ``{"M": ["and"|"or", P, P]}``, ``{"M": ["not", P]}`` of predicates ``P``
- ``{"mask": k, "ok": bool, "reason": str | null, "grid": bool}`` a constant mask predicate's value
- ``{"buf": space, "alloc": null | [space, base_addr, base_partition, [par tiles], [free tiles], base_bank]}``
- ``{"fn": name}`` an ALU operator or activation function, by its op-table name

Nothing else is encodable: a call with any other argument cannot be recorded (``RecordError``), and a decoder
meets only what ``program.validate`` let through.
"""

from __future__ import annotations

import math
import operator
from typing import Any

import numpy as np

from nkisim.core import dtypes as dt
from nkisim.core.access import Access
from nkisim.core.buffers import SPACES, Buffer, ModAlloc
from nkisim.core.dynamic import DynamicIndex
from nkisim.core.indexing import Affine, DynSlice, Loop, MaskExpr
from nkisim.core.tensor import Tensor
from nkisim.ops.creation import par_dim
from nkisim.ops.optable import is_operator, op_name
from nkisim.program.ir import Array, ProgramError

#: dtypes an array constant may have: a tile's (tfloat32 is a float32 array), index grids' int64, host float64
ARRAY_DTYPES = tuple(dt.name(d) for d in dt.SUPPORTED if d is not dt.tfloat32) + ("int64", "float64")


class RecordError(TypeError):
    """A kernel passed an NKI call something a program cannot hold."""


def _callable_name(x: Any) -> str | None:
    """The op-table name of an operator argument (``nl.add``, ``np.exp``), None for other callables."""
    name = op_name(x)
    return name if is_operator(name) else None


class Encoder:
    """Encodes one recording's operands: tensors by their program id, loops by theirs, arrays into a table."""

    def __init__(self) -> None:
        self.tensor_ids: dict[int, int] = {}  # Tensor.uid -> program id
        self.loop_ids: dict[int, int] = {}  # Loop.uid -> program id
        self.arrays: list[Array] = []
        self._array_ids: dict[tuple, int] = {}
        #: loops whose variables an encoded operand holds only as a value frozen at the current iteration
        #: (``i % 2``, a predicate computed by Python): a body that encodes one cannot be traced once
        self.frozen: set[Loop] = set()
        #: program id -> tensor, for every tensor encoded while ``seen`` is a dict (``runtime.record``)
        self.seen: dict[int, Tensor] | None = None

    # --- tables --------------------------------------------------------------------------------
    def new_tensor(self, t: Tensor) -> int:
        pid = self.tensor_ids[t.uid] = len(self.tensor_ids)
        if self.seen is not None:
            self.seen[pid] = t
        return pid

    def tensor(self, t: Tensor) -> int:
        pid = self.tensor_ids.get(t.uid)
        if pid is None:
            raise RecordError(f"tensor `{t.label()}` was not made by an NKI call the program recorded")
        if self.seen is not None:
            self.seen[pid] = t
        return pid

    def new_loop(self, loop: Loop) -> int:
        lid = self.loop_ids[loop.uid] = len(self.loop_ids)
        return lid

    def loop(self, loop: Loop) -> int:
        lid = self.loop_ids.get(loop.uid)
        if lid is None:
            raise RecordError("an index expression uses a loop the program did not record")
        return lid

    def array(self, a: np.ndarray) -> int:
        a = np.ascontiguousarray(a)
        name = dt.name(dt.normalize(a.dtype)) if a.dtype != np.float64 else "float64"
        if name not in ARRAY_DTYPES:
            raise RecordError(f"an array of dtype {a.dtype} cannot be recorded")
        data = a.tobytes()
        key = (name, a.shape, data)
        k = self._array_ids.get(key)
        if k is None:
            k = self._array_ids[key] = len(self.arrays)
            self.arrays.append(Array(name, tuple(int(s) for s in a.shape), data))
        return k

    # --- values --------------------------------------------------------------------------------
    def value(self, x: Any) -> Any:  # noqa: C901 - one case per kind of operand, in the grammar's order
        cls = x.__class__
        if x is None or cls in (bool, str):
            return x
        if cls is int:
            return x
        if cls is float:
            return x if math.isfinite(x) else {"float": "nan" if x != x else ("inf" if x > 0 else "-inf")}
        if cls is Tensor or isinstance(x, Tensor):
            return {"T": self.tensor(x)}
        if cls is Access or isinstance(x, Access):
            return self.access(x)
        if cls is Affine:
            return self.affine(x)
        if cls is list:
            return [self.value(v) for v in x]
        if cls is tuple:
            return {"tuple": [self.value(v) for v in x]}
        if isinstance(x, par_dim):
            return {"par_dim": int(x)}
        if isinstance(x, bool):
            return bool(x)
        if isinstance(x, int):  # IntEnum (nisa.engine, reduce_cmd ...): its number
            return int(x)
        if cls is dict:
            if not all(isinstance(k, str) for k in x):
                raise RecordError("a dict argument with keys that are not strings cannot be recorded")
            return {"dict": [[k, self.value(v)] for k, v in x.items()]}
        if cls is slice:
            return {"slice": [self.value(x.start), self.value(x.stop), self.value(x.step)]}
        if cls is DynSlice:
            return {"ds": [self.value(x.start), int(x.size)]}
        if x is Ellipsis:
            return {"ellipsis": 1}
        if cls is DynamicIndex:
            return {"D": self.value(x.element), "off": self.affine(x.offset)}
        if cls is MaskExpr:
            return self.mask(x)
        if isinstance(x, Buffer):
            a = x.alloc
            alloc = None if a is None else [a.space, int(a.base_addr), int(a.base_partition),
                                            [int(v) for v in a.num_par_tiles], [int(v) for v in a.num_free_tiles],
                                            None if a.base_bank is None else int(a.base_bank)]
            return {"buf": x.space, "alloc": alloc}
        if isinstance(x, np.ndarray):
            if x.ndim == 0:
                return {"np": dt.name(dt.normalize(x.dtype)), "v": self.value(x.item())}
            return {"arr": self.array(x)}
        if isinstance(x, np.generic):
            return {"np": dt.name(dt.normalize(x.dtype)), "v": self.value(x.item())}
        if isinstance(x, np.dtype) or (isinstance(x, type) and issubclass(x, np.generic)):
            return {"dtype": dt.name(dt.normalize(x))}
        if isinstance(x, float):
            return self.value(float(x))
        if callable(x):
            name = _callable_name(x)
            if name is not None:
                return {"fn": name}
        raise RecordError(f"an argument of type {type(x).__name__} cannot be recorded into a program")

    def mask(self, m: MaskExpr) -> dict:
        """A predicate over index expressions stays one (``{"M": ...}``), so a loop body traced once masks each
        iteration by its own values; a constant predicate is its value."""
        e = m.expr
        if e is None:
            if m.loops:
                self.frozen |= m.loops
            return {"mask": self.array(np.asarray(m.value, dtype=bool)), "ok": bool(m.ok), "reason": m.reason,
                    "grid": bool(m.has_grid)}
        if e[0] == "cmp":
            return {"M": ["cmp", e[1], self.affine(e[2]), self.affine(e[3])]}
        return {"M": [e[0], *(self.mask(sub) for sub in e[1:])]}

    def affine(self, a: Affine) -> dict:
        if not a.affine and a.loops:  # its value was frozen at this iteration
            self.frozen |= a.loops
        return {"X": int(a.const), "t": [[self.loop(lp), int(c)] for lp, c in a.terms.items()],
                "g": None if a.grid is None else self.array(np.asarray(a.grid, dtype=np.int64)),
                "affine": bool(a.affine), "loops": sorted(self.loop(lp) for lp in a.loops)}

    def access(self, acc: Access) -> dict:
        if acc.is_whole:
            return {"W": self.tensor(acc.tensor)}
        comps = []
        for c in acc.comps:
            kind = c[0]
            if kind == "slice":
                comps.append(["slice", self.affine(Affine.lift(c[1])), self.affine(Affine.lift(c[2])), int(c[3])])
            elif kind in ("int", "adv"):
                comps.append([kind, self.affine(c[1])])
            elif kind == "ind":
                comps.append(["ind", self.access(c[1])])
            else:
                comps.append(["dyn", self.value(c[1])])
        return {"A": self.tensor(acc.tensor), "c": comps}


def result_tensors(value: Any, found: list[Tensor] | None = None) -> list[Tensor]:
    """The tensors a call's result holds, in a fixed walk order (tensors, accesses' tensors, sequences)."""
    out = [] if found is None else found
    if isinstance(value, Tensor):
        out.append(value)
    elif isinstance(value, Access):
        out.append(value.tensor)
    elif isinstance(value, (tuple, list)):
        for v in value:
            result_tensors(v, out)
    return out


#: a symbolic mask predicate's comparison operators (``{"M": ["cmp", op, X, X]}``), shared with ``program.plan``
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}


class Decoder:
    """Decodes encoded values of a valid program against the executor's live tensors and loops."""

    def __init__(self, arrays: tuple[Array, ...], tensors: dict[int, Tensor], loops: dict[int, Loop]) -> None:
        self.arrays = arrays
        self.tensors = tensors
        self.loops = loops
        self._values: dict[int, np.ndarray] = {}
        from nkisim.core import buffers

        self._singletons = {b: getattr(buffers, b) for b in SPACES}

    def array(self, k: int) -> np.ndarray:
        v = self._values.get(k)
        if v is None:
            v = self._values[k] = self.arrays[k].value()
        return v

    def tensor(self, pid: int) -> Tensor:
        t = self.tensors.get(pid)
        if t is None:
            raise ProgramError(f"invalid program: tensor {pid} is used before any call made it")
        return t

    def value(self, x: Any) -> Any:  # noqa: C901 - one case per kind, mirroring Encoder.value
        if x.__class__ is dict and x:  # (first: a call that runs once is decoded here, operand by operand)
            key = next(iter(x))
            first = x[key]
        elif x is None or isinstance(x, (bool, int, float, str)):
            return x
        elif isinstance(x, list):
            return [self.value(v) for v in x]
        else:
            (key, first), = list(x.items())[:1]
        if key == "T":
            t = self.tensors.get(first)
            return t if t is not None else self.tensor(first)
        if key == "A":
            return self.access(x)
        if key == "W":
            return self.tensor(first).full()
        if key == "X":
            return self.affine(x)
        if key == "tuple":
            return tuple(self.value(v) for v in first)
        if key == "dict":
            return {k: self.value(v) for k, v in first}
        if key == "float":
            return float(first)
        if key == "par_dim":
            return par_dim(first)
        if key == "slice":
            return slice(*(self.value(v) for v in first))
        if key == "ds":
            return DynSlice(self.value(first[0]), first[1])
        if key == "ellipsis":
            return Ellipsis
        if key == "D":
            return DynamicIndex(self.value(first), self.affine(x["off"]))
        if key == "mask":
            return MaskExpr(self.array(first), x["ok"], x["reason"], x["grid"])
        if key == "M":
            return self.mask(first)
        if key == "buf":
            a = x["alloc"]
            if a is None:
                return self._singletons[first]
            return Buffer(first, ModAlloc(a[0], a[1], a[2], tuple(a[3]), tuple(a[4]), a[5]))
        if key == "arr":
            return self.array(first).copy()
        if key == "np":
            return dt.normalize(first).type(self.value(x["v"])) if first != "bfloat16" else \
                np.asarray(self.value(x["v"]), dtype=dt.normalize(first))[()]
        if key == "dtype":
            return dt.normalize(first)
        if key == "fn":
            return first  # the ops take an operator by its op-table name
        raise ProgramError(f"invalid program: unknown operand kind {key!r}")

    def mask(self, m: list) -> MaskExpr:
        """A symbolic predicate, evaluated at the loops' current iterations."""
        kind = m[0]
        if kind == "cmp":
            return COMPARE[m[1]](self.affine(m[2]), self.affine(m[3]))
        if kind == "not":
            return ~self.value(m[1])
        a, b = self.value(m[1]), self.value(m[2])
        return a & b if kind == "and" else a | b

    def affine(self, x: dict) -> Affine:
        terms = {self.loops[lid]: coef for lid, coef in x["t"]}
        grid = None if x["g"] is None else self.array(x["g"])
        loops = frozenset(self.loops[lid] for lid in x["loops"])
        if not terms and grid is None and x["affine"] and not loops:
            return Affine.constant(x["X"])
        return Affine(x["X"], terms, grid, x["affine"], loops)

    def access(self, x: dict) -> Access:
        if "W" in x:
            return self.tensor(x["W"]).full()
        key = []
        for comp in x["c"]:
            kind = comp[0]
            if kind == "slice":
                key.append(slice(self.affine(comp[1]), self.affine(comp[2]), comp[3]))
            elif kind in ("int", "adv"):
                key.append(self.affine(comp[1]))
            elif kind == "ind":
                key.append(self.access(comp[1]))
            else:
                key.append(self.value(comp[1]))
        return Access(self.tensor(x["A"]), tuple(key))



def tensor_ids(x: Any, found: set[int] | None = None) -> set[int]:
    """The tensor ids an encoded value refers to (tensors, accesses, index tiles, dynamic indices)."""
    out = set() if found is None else found
    if isinstance(x, list):
        for v in x:
            tensor_ids(v, out)
    elif isinstance(x, dict):
        for k, v in x.items():
            if k in ("T", "A", "W") and type(v) is int:
                out.add(v)
            else:
                tensor_ids(v, out)
    return out
