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
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    by_track: dict[str, list[dict]] = {}
    for e in slices:
        by_track.setdefault(names[(e["pid"], e["tid"])], []).append(e)
    # every instruction is one slice on its engine's track; each DMA also one slice on each queue it uses
    engine_slices = [e for name, evs in by_track.items() for e in evs
                     if not name.startswith(("DMA", "launch overhead"))]
    dma = [i for i in prof.trace if i.engine == "dma"]
    assert len(engine_slices) == len(prof.trace) - len(dma) == 8
    # 128-row tiles spread over all 16 queues (a transfer filling earlier idle gaps shows as several pieces)
    assert len({e["args"]["instruction"] for e in by_track["DMA queue 15"]}) == len(dma) == 8 * 3
    assert [(e["ts"], e["dur"]) for e in by_track["launch overhead (fixed per launch)"]] == [(0.0, prof.launch_us)]
    # slices on one track never overlap (Perfetto would nest or drop them), and all lie within the launch
    for evs in by_track.values():
        spans = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs)
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(spans, spans[1:]))
    end = max(e["ts"] + e["dur"] for e in slices)
    assert end == pytest.approx(prof.estimate.total_us, abs=1e-3)  # the last instruction ends the launch
    assert min(e["ts"] for e in slices if names[(e["pid"], e["tid"])].startswith("DMA queue")) >= prof.launch_us


def test_summary_counts_dma_and_flops() -> None:
    prof = profile_kernel(matmul_kernel, nt.tensor[[1024, 128], nl.bfloat16], nt.tensor[[1024, 512], nl.bfloat16])
    s = prof.summary()
    assert s["dma_transfer_count"] == 8 * 2 + 1
    assert s["dma_transfer_bytes"] == 8 * (128 * 128 + 128 * 512) * 2 + 128 * 512 * 2
    flops = 2 * 1024 * 128 * 512
    assert s["flops"] == flops
    assert s["achieved_tflops"] == pytest.approx(flops / (s["total_time_us"] * 1e-6) / 1e12, rel=1e-2)
    assert 0 < s["pe_utilization"] < 1
    assert "estimate" in s["label"] and s["target"] == "trn2"
    assert "estimate" in prof.summary_text()


def _matmul_2048():
    from nkisim.api import as_kernel

    src = (Path(__file__).resolve().parent.parent / "solutions" / "06_tensor_engine_matmul" / "matmul_tiled.py")
    scope: dict = {}
    exec(compile(src.read_text(), str(src), "exec"), scope)
    a = nt.tensor[[2048, 2048], nl.bfloat16]
    return profile_kernel(as_kernel(scope["matmul_tiled"]), a, a, target="trn2")


def test_dma_active_is_defined_and_within_the_launch() -> None:
    """Issue 22: "DMA active 10362.52 us" for a 662.63 us kernel was the 16 queues' time summed.  DMA active is
    now the time any transfer is in flight (a union of intervals: at most the launch), and the queue time is
    reported separately, as what it is."""
    prof = _matmul_2048()
    s = prof.summary()
    total = s["total_time_us"]
    assert total == pytest.approx(prof.estimate.total_us, abs=1e-3)
    assert s["launch_overhead_us"] + s["instructions_time_us"] == pytest.approx(total, abs=1e-2)
    assert 0 < s["dma_active_us"] <= total - s["launch_overhead_us"] + 1e-6
    assert s["engine_active_time_us"]["DMA"] == s["dma_active_us"]
    for name, us in s["engine_active_time_us"].items():
        assert 0 <= us <= total, name
        assert 0 <= s["engine_utilization"][name] <= 1, name
    # the queues' summed time: more than the launch (16 queues in parallel), never more than 16 x the launch
    assert total < s["dma_queue_time_us"] <= 16 * total
    assert s["dma_queue_time_us"] == pytest.approx(prof.estimate.engine_busy_us["dma"], abs=1e-2)
    assert 0 < s["dma_queue_utilization"] <= 1
    assert {"DMA active", "DMA queue time", "launch_overhead", "engine active"} <= set(s["definitions"])
    text = prof.summary_text()
    assert "DMA active" in text and "at least one transfer in flight" in text
    assert "summed over 16 queues" in text and "fixed launch cost" in text
    # the active time is the union of the DMA lane's bars, the queue time the sum of the queue lanes'
    from nkisim.cost import timeline

    lanes = {lane.name: lane for lane in timeline.lanes(prof, 0)}
    drawn = sum(b - a for a, b, _ in lanes["DMA active (a transfer in flight)"].slices)
    assert drawn == pytest.approx(s["dma_active_us"], rel=1e-6)


def test_two_cores_count_each_core_within_the_launch() -> None:
    @nki.jit
    def spmd_add(a, b):
        out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
        i = nl.program_id(0)
        x = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], nl.add(x, nl.load(b[i * 128:(i + 1) * 128, :])))
        return out

    a = nt.tensor[[256, 2048], nl.float32]
    prof = profile_kernel(spmd_add[nl.nc(2)], a, a, target="trn2")
    s = prof.summary()
    assert s["cores"] == 2 and s["dma_queues"] == 32
    assert 0 < s["dma_active_us"] <= 2 * s["total_time_us"]
    assert all(0 <= u <= 1 for u in s["engine_utilization"].values())
    labels = [t.get_text() for t in prof.figure().axes[0].get_yticklabels()]
    assert "NC0 DMA queue 15" in labels and "NC1 Vector Engine" in labels


def test_line_table_points_at_kernel_lines() -> None:
    prof = profile_kernel(stream_add, nt.tensor[[512, 256], nl.float32], nt.tensor[[512, 256], nl.float32])
    rows = prof.line_table()
    assert sum(r["instructions"] for r in rows) == len(prof.trace)
    y = next(r for r in rows if "LINE_Y" in r["source"])
    assert y["instructions"] == 4 and y["engines"] == ["dma"] and y["file"] == __file__
    assert rows == sorted(rows, key=lambda r: -r["engine_time_us"])


def test_nki_profile_writes_the_trace_where_asked(tmp_path: Path) -> None:
    a = np.ones((256, 128), np.float32)
    nki.profile(working_directory=str(tmp_path), save_trace_name="va.ntff")(stream_add)(a, a)
    files = {p.name for p in tmp_path.iterdir()}
    assert files == {"va.ntff", "va_summary.json", "va_lines.txt", "va_timeline.png"}
    jsonschema.validate(json.loads((tmp_path / "va.ntff").read_text()), TRACE_SCHEMA)
    assert (tmp_path / "va_timeline.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(FileExistsError):
        nki.profile(working_directory=str(tmp_path), save_trace_name="va.ntff")(stream_add)(a, a)
    # the default name is the real tool's; a subdirectory or an absolute path is honoured as given
    wd = tmp_path / "wd"
    nki.profile(working_directory=str(wd))(stream_add)(a, a)
    assert (wd / "profile.ntff").exists() and (wd / "profile_timeline.png").exists()
    nki.profile(working_directory=str(wd), save_trace_name="runs/one.json")(stream_add)(a, a)
    assert (wd / "runs" / "one.json").exists() and (wd / "runs" / "one_summary.json").exists()
    elsewhere = tmp_path / "elsewhere" / "trace.ntff"
    nki.profile(working_directory=str(wd), save_trace_name=str(elsewhere))(stream_add)(a, a)
    assert json.loads(elsewhere.read_text())["traceEvents"]
    assert (elsewhere.parent / "trace_lines.txt").exists()
    # nki.benchmark writes its trace at save_trace_name too (relative to the working directory of the script)
    bench_trace = tmp_path / "bench.ntff"
    nki.benchmark(save_trace_name=str(bench_trace))(stream_add)(a, a)
    assert json.loads(bench_trace.read_text())["traceEvents"]


def test_profile_figure_names_every_lane_and_covers_the_launch() -> None:
    a = nt.tensor[[512, 512], nl.float32]
    prof = profile_kernel(stream_add, a, a, target="trn1")
    fig = prof.figure()
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["launch overhead (fixed per launch)", "Tensor Engine (PE)", "Vector Engine",
                      "Scalar Engine (ACT)", "GpSimd Engine", "DMA active (a transfer in flight)",
                      *[f"DMA queue {q}" for q in range(16)]]
    total = prof.estimate.total_us
    assert ax.get_xlim() == pytest.approx((0.0, total))  # the axis is the whole launch, as the title says
    assert f"{total:.1f} us on trn1" in ax.get_title() and "fixed launch cost" in ax.get_title()
    assert isinstance(prof, Profile)


@nki.jit
def row_at_a_time(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0]):
        x = nl.load(a[i:i + 1, :])
        nl.store(out[i:i + 1, :], nl.add(x, nl.load(b[i:i + 1, :])))
    return out


def test_queue_lanes_show_how_many_queues_a_transfer_uses() -> None:
    """The lessons' point: a 128-row tile spreads over all 16 queues, a 1-row tile keeps one busy."""
    from nkisim.cost import timeline

    a = nt.tensor[[128, 512], nl.float32]
    wide = {lane.name: lane for lane in timeline.lanes(profile_kernel(stream_add, a, a), 0)}
    narrow = {lane.name: lane for lane in timeline.lanes(profile_kernel(row_at_a_time, a, a), 0)}
    assert all({i for _a, _b, i in wide[f"DMA queue {q}"].slices} == {i for _a, _b, i in wide["DMA queue 0"].slices}
               for q in range(16))
    assert len({i for _a, _b, i in wide["DMA queue 0"].slices}) == 3
    assert len({i for _a, _b, i in narrow["DMA queue 0"].slices}) == 3 * 128
    assert all(not narrow[f"DMA queue {q}"].slices for q in range(1, 16))


@nki.jit
def eight_live_tiles(a):
    """Eight [128, 8192] fp32 tiles live at once (256 KiB per partition): more than SBUF holds, so spilled."""
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    tiles = [nl.load(a) for _ in range(8)]
    acc = tiles[0]
    for t in tiles[1:]:
        acc = nl.add(acc, t)
    nl.store(out, value=acc)
    return out


def test_spill_traffic_is_on_the_timeline_and_in_the_active_times() -> None:
    """The compiler's spills are work the estimate charges (DMA transfers to HBM and back): the timeline draws them
    on the DMA queues, "DMA active" counts them, and the queue lanes add up to the queue time the summary gives."""
    from nkisim.cost import timeline

    prof = profile_kernel(eight_live_tiles, nt.tensor[[128, 8192], nl.float32])
    s = prof.summary()
    spills = prof.estimate.spill_dma_count
    assert spills > 0 and s["dma_transfer_count"] == len([i for i in prof.trace if i.engine == "dma"]) + spills
    assert sum(1 for q in prof.queue_spans if q.index is None and q.queue == 0) >= spills
    lanes = {lane.name: lane for lane in timeline.lanes(prof, 0)}
    queue_us = sum(b - a for q in range(16) for a, b, _ in lanes[f"DMA queue {q}"].slices)
    assert queue_us == pytest.approx(s["dma_queue_time_us"], rel=1e-6)  # every queue-microsecond drawn, spills too
    trace_only = [(ev.start_ns, ev.end_ns) for ev in prof.events if ev.engine == "dma"]
    from nkisim.cost.report import union_length

    assert s["dma_active_us"] > union_length([(a / 1000, b / 1000) for a, b in trace_only])
    assert s["dma_active_us"] <= s["total_time_us"]
    doc = prof.perfetto()
    assert any(e.get("name", "").startswith("spill") for e in doc["traceEvents"] if e["ph"] == "X")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16", "float8_e4m3"])
def test_the_utilisation_is_of_the_peak_nkisim_api_states(dtype: str) -> None:
    """The profile's TensorE peak is the one ``nkisim.api.pe_peak_tflops`` gives for the matmuls' dtype (one home
    for the dtype-to-rate map: the profile made its own fp32/bf16 choice, and measured an fp8 matmul against bf16)."""
    from nkisim import api

    for target in api.targets():
        prof = profile_kernel(matmul_kernel, nt.tensor[[256, 128], dtype], nt.tensor[[256, 512], dtype], target=target)
        assert prof.summary()["peak_tflops"] == api.pe_peak_tflops(target, dtype), (target, dtype)
    assert len({api.pe_peak_tflops("trn2", d) for d in ("float32", "bfloat16", "float8_e4m3")}) == 3
