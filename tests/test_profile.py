"""nki.profile and the notebook profile helper: Perfetto trace, summary, per-line table, timeline."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import numpy as np
import pytest

from nkisim.api import profile_kernel
from nkisim.cost.report import Profile

# The subset of the Chrome trace-event format that Perfetto's JSON importer reads.
TRACE_SCHEMA = {
    "type": "object",
    "required": ["traceEvents"],
    "properties": {
        "displayTimeUnit": {"enum": ["ms", "ns"]},
        "traceEvents": {
            "type": "array",
            "items": {
                "oneOf": [
                    {"type": "object", "required": ["ph", "name", "ts", "dur", "pid", "tid"],
                     "properties": {"ph": {"const": "X"}, "name": {"type": "string", "minLength": 1},
                                    "ts": {"type": "number", "minimum": 0}, "dur": {"type": "number", "minimum": 0},
                                    "pid": {"type": "integer"}, "tid": {"type": "integer"},
                                    "cat": {"type": "string"}, "args": {"type": "object"}}},
                    {"type": "object", "required": ["ph", "name", "pid", "args"],
                     "properties": {"ph": {"const": "M"},
                                    "name": {"enum": ["thread_name", "process_name", "thread_sort_index"]},
                                    "pid": {"type": "integer"}, "tid": {"type": "integer"},
                                    "args": {"type": "object"}}},
                ]
            },
        },
    },
}


@nki.jit
def stream_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        y = nl.load(b[i * 128:(i + 1) * 128, :])  # LINE_Y
        nl.store(out[i * 128:(i + 1) * 128, :], nl.add(x, y))
    return out


@nki.jit
def matmul_kernel(lhsT, rhs):
    out = nl.ndarray((lhsT.shape[1], rhs.shape[1]), dtype=lhsT.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(lhsT.shape[0] // 128):
        acc += nl.matmul(nl.load(lhsT[k * 128:(k + 1) * 128, :]), nl.load(rhs[k * 128:(k + 1) * 128, :]),
                         transpose_x=True)
    nl.store(out, nl.copy(acc, dtype=out.dtype))
    return out


def test_perfetto_trace_matches_the_schema_and_the_trace() -> None:
    prof = profile_kernel(stream_add, nt.tensor[[1024, 512], nl.float32], nt.tensor[[1024, 512], nl.float32])
    doc = json.loads(json.dumps(prof.perfetto()))
    jsonschema.validate(doc, TRACE_SCHEMA)
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(slices) == len(prof.trace) == 8 * 4
    # slices on one track never overlap (Perfetto would nest or drop them)
    tracks: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for e in slices:
        tracks.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in tracks.values():
        spans.sort()
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:]))
    end = max(e["ts"] + e["dur"] for e in slices)
    assert end <= prof.estimate.total_us + 1e-6


def test_summary_counts_dma_and_flops() -> None:
    prof = profile_kernel(matmul_kernel, nt.tensor[[1024, 128], nl.bfloat16], nt.tensor[[1024, 512], nl.bfloat16])
    s = prof.summary()
    assert s["dma_transfer_count"] == 8 * 2 + 1
    assert s["dma_transfer_bytes"] == 8 * (128 * 128 + 128 * 512) * 2 + 128 * 512 * 2
    flops = 2 * 1024 * 128 * 512
    assert s["achieved_tflops"] == pytest.approx(flops / (s["total_time_us"] * 1e-6) / 1e12, rel=1e-2)
    assert 0 < s["pe_utilization"] < 1
    assert "estimate" in s["label"] and s["target"] == "trn2"
    assert "estimate" in prof.summary_text()


def test_line_table_points_at_kernel_lines() -> None:
    prof = profile_kernel(stream_add, nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 256], nl.float32])
    rows = prof.line_table()
    assert sum(r["instructions"] for r in rows) == len(prof.trace)
    y = next(r for r in rows if "LINE_Y" in r["source"])
    assert y["instructions"] == 4 and y["engines"] == ["dma"] and y["file"] == __file__
    assert rows == sorted(rows, key=lambda r: -r["engine_time_us"])


def test_nki_profile_writes_all_artifacts(tmp_path: Path) -> None:
    a = np.ones((256, 128), np.float32)
    nki.profile(working_directory=str(tmp_path), save_trace_name="va.ntff")(stream_add)(a, a)
    files = {p.name for p in tmp_path.iterdir()}
    assert files == {"va.json", "va_summary.json", "va_lines.txt", "va_timeline.png"}
    jsonschema.validate(json.loads((tmp_path / "va.json").read_text()), TRACE_SCHEMA)
    assert (tmp_path / "va_timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileExistsError):
        nki.profile(working_directory=str(tmp_path), save_trace_name="va.ntff")(stream_add)(a, a)


def test_profile_figure_has_a_row_per_engine_lane() -> None:
    a = nt.tensor[[512, 512], nl.float32]
    prof = profile_kernel(stream_add, a, a, target="trn1")
    fig = prof.figure()
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert any("Vector" in x for x in labels) and any("DMA" in x for x in labels)
    assert "trn1" in fig.axes[0].get_title()
    assert isinstance(prof, Profile)
