"""``nki.collectives``: communication across NeuronDevices, which the simulator does not model.

Every call raises a clear error naming itself (AWS's own CPU simulator does not implement collectives either),
so a kernel that uses them fails at its own line instead of computing something else.
"""

from __future__ import annotations

from typing import Any

#: the 0.6 collectives, each refused
NAMES = ("all_reduce", "all_gather", "all_gather_v", "reduce_scatter", "all_to_all", "all_to_all_v",
         "collective_permute", "collective_permute_implicit", "collective_permute_implicit_reduce",
         "collective_permute_implicit_current_processing_rank_id", "rank_id")


class CollectivesNotSupported(NotImplementedError):
    """A collective (``nki.collectives.*``) called on the simulator."""


class ReplicaGroup:
    """A group of ranks a collective runs over (constructed freely; no collective runs)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


def _refused(name: str) -> Any:
    def refused(*args: Any, **kwargs: Any) -> Any:
        # rule: limit.refused_api
        raise CollectivesNotSupported(f"nki.collectives.{name}: collectives across devices are not supported by the "
                                      f"nkisim simulator (one NeuronCore, or two under kernel[2], is simulated; AWS's "
                                      f"nki.simulate does not implement collectives either)")

    refused.__name__ = name
    refused.__qualname__ = f"nki.collectives.{name}"
    refused.__nki06_refused__ = "collectives across devices"  # type: ignore[attr-defined]
    return refused


for _name in NAMES:
    globals()[_name] = _refused(_name)
