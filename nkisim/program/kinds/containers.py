"""Operand kinds that hold other operands: lists, tuples, dicts, slices, ``nl.ds`` and ``...``.

Each kind is one class with its whole table (JSON, parser, encoder, check, tensor ids, decoder, plan); see
``program.operands``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from nkisim.core.grids import DynSlice
from nkisim.program.limits import MAX_NAME, RecordError, integer, need, text, text_ok
from nkisim.program.operands import (
    Decoding,
    Encoding,
    Kind,
    Operand,
    Part,
    Planning,
    Scope,
    fields,
    getter,
    kind,
    operand_json,
    operand_tensors,
    parse_operand,
)


# --- containers ----------------------------------------------------------------------------------------------
@kind
@dataclass(frozen=True, slots=True)
class ListOf(Kind):
    """A Python list argument (``axis=[1]``): its JSON form is the list of its items."""

    items: tuple[Operand, ...]
    encodes = (list,)
    exact = True
    list_form = True

    def json(self) -> Any:
        return [operand_json(v) for v in self.items]

    @classmethod
    def parse(cls, raw: Any, depth: int) -> Operand:
        return cls(tuple([parse_operand(v, depth + 1) for v in raw]))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(tuple(enc.value(v) for v in x))

    def check(self, scope: Scope, depth: int) -> None:
        for v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return [dec.value(v) for v in self.items]

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in self.items]
        if all(c for c, _ in parts):  # a fresh list each run, of values shared as the decoder's would be
            return False, functools.partial(list, tuple(v for _, v in parts))
        getters = [getter(p) for p in parts]
        return False, lambda: [g() for g in getters]


@kind
@dataclass(frozen=True, slots=True)
class TupleOf(Kind):
    """A tuple argument (a shape): ``{"tuple": [item, ...]}``."""

    items: tuple[Operand, ...]
    tag = "tuple"
    encodes = (tuple,)
    exact = True

    def json(self) -> Any:
        return {"tuple": [operand_json(v) for v in self.items]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "tuple")
        need(isinstance(raw["tuple"], list), "a tuple holds a list")
        return cls(tuple(parse_operand(v, depth + 1) for v in raw["tuple"]))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(tuple(enc.value(v) for v in x))

    def check(self, scope: Scope, depth: int) -> None:
        for v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return tuple(dec.value(v) for v in self.items)

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in self.items]
        if all(c for c, _ in parts):
            return True, tuple(v for _, v in parts)
        getters = [getter(p) for p in parts]
        return False, lambda: tuple([g() for g in getters])


@kind
@dataclass(frozen=True, slots=True)
class DictOf(Kind):
    """A dict argument with string keys: ``{"dict": [[key, value], ...]}``."""

    items: tuple[tuple[str, Operand], ...]
    tag = "dict"
    encodes = (dict,)
    exact = True

    def json(self) -> Any:
        return {"dict": [[k, operand_json(v)] for k, v in self.items]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "dict")
        items = raw["dict"]
        need(isinstance(items, list) and all(isinstance(p, list) and len(p) == 2 for p in items),
             "a dict holds [key, value] pairs")
        return cls(tuple((text(k, "a dict key", MAX_NAME), parse_operand(v, depth + 1)) for k, v in items))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        if not all(k.__class__ is str and text_ok(k, MAX_NAME) for k in x):
            raise RecordError("a dict argument can be recorded only with short one-line string keys")
        return cls(tuple((k, enc.value(v)) for k, v in x.items()))

    def check(self, scope: Scope, depth: int) -> None:
        for _, v in self.items:
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for _, v in self.items:
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return {k: dec.value(v) for k, v in self.items}

    def plan(self, comp: Planning) -> Part:
        kgetters = [(k, getter(comp.value(v))) for k, v in self.items]
        return False, lambda: {k: g() for k, g in kgetters}




@kind
@dataclass(frozen=True, slots=True)
class SliceOf(Kind):
    """A raw ``slice`` argument: ``{"slice": [start, stop, step]}``."""

    start: Operand
    stop: Operand
    step: Operand
    tag = "slice"
    encodes = (slice,)
    exact = True

    def json(self) -> Any:
        return {"slice": [operand_json(self.start), operand_json(self.stop), operand_json(self.step)]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "slice")
        need(isinstance(raw["slice"], list) and len(raw["slice"]) == 3, "a slice has three parts")
        start, stop, step = (parse_operand(v, depth + 1) for v in raw["slice"])
        return cls(start, stop, step)

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(enc.value(x.start), enc.value(x.stop), enc.value(x.step))

    def check(self, scope: Scope, depth: int) -> None:
        for v in (self.start, self.stop, self.step):
            scope.value(v, depth + 1)

    def tensors(self, out: set[int]) -> None:
        for v in (self.start, self.stop, self.step):
            operand_tensors(v, out)

    def decode(self, dec: Decoding) -> Any:
        return slice(dec.value(self.start), dec.value(self.stop), dec.value(self.step))

    def plan(self, comp: Planning) -> Part:
        parts = [comp.value(v) for v in (self.start, self.stop, self.step)]
        if all(c for c, _ in parts):
            return True, slice(*(v for _, v in parts))
        getters = [getter(p) for p in parts]
        return False, lambda: slice(*[g() for g in getters])


@kind
@dataclass(frozen=True, slots=True)
class DynSliceOf(Kind):
    """``nl.ds(start, size)``: ``{"ds": [start, size]}``."""

    start: Operand
    size: int
    tag = "ds"
    encodes = (DynSlice,)
    exact = True

    def json(self) -> Any:
        return {"ds": [operand_json(self.start), self.size]}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "ds")
        need(isinstance(raw["ds"], list) and len(raw["ds"]) == 2, "nl.ds has a start and a size")
        return cls(parse_operand(raw["ds"][0], depth + 1), integer(raw["ds"][1], "an nl.ds size"))

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls(enc.value(x.start), int(x.size))

    def check(self, scope: Scope, depth: int) -> None:
        scope.value(self.start, depth + 1)

    def tensors(self, out: set[int]) -> None:
        operand_tensors(self.start, out)

    def decode(self, dec: Decoding) -> Any:
        return DynSlice(dec.value(self.start), self.size)

    def plan(self, comp: Planning) -> Part:
        start, size = getter(comp.value(self.start)), self.size
        return False, lambda: DynSlice(start(), size)


@kind
@dataclass(frozen=True, slots=True)
class EllipsisOf(Kind):
    """``...`` as an argument: ``{"ellipsis": 1}``."""

    tag = "ellipsis"
    encodes = (type(Ellipsis),)
    exact = True

    def json(self) -> Any:
        return {"ellipsis": 1}

    @classmethod
    def parse(cls, raw: dict[str, Any], depth: int) -> Operand:
        fields(raw, "ellipsis")
        need(raw["ellipsis"] == 1, "an ellipsis is {'ellipsis': 1}")
        return cls()

    @classmethod
    def encode(cls, x: Any, enc: Encoding) -> Operand:
        return cls()

    def decode(self, dec: Decoding) -> Any:
        return Ellipsis
