"""Two compiler behaviours that set how AWS's RMSNorm-Quant reference scales with H (issue 31), each with the AWS text
it follows, a kernel that shows it, its variant that must not, and the "Why:" line the profile prints for it.

- A DMA of a one-partition tile (``[1, H]``) goes in 4-byte pieces on trn2: "The code intends to load the entire
  ``[1, H]`` tensor in a single operation. However, it should be noted that the compiler performs optimizations for
  trivial dimensions, which can result in several small (e.g., 4-byte) DMA buffer loads" (aws-neuron-sdk
  nki/library/specs/design-rmsnorm-quant.rst:281).  Not on trn1: AWS's trn1 Mamba tutorial loads ``[1, seq_len]``
  rows at its published speed (bench/published_latencies.csv).
- A legacy tile that no instruction reads holds no SBUF beyond its write: the compiler allocates SBUF to live data
  ("When the cumulative size of live data defined by the NKI kernel overflows the capacity of any on-chip memory",
  v2.26.0 general/nki/programming_model.rst:172-174), so an output an instruction must be given but nobody reads
  (RMSNorm-Quant's squares and absolute values) leaves the other tiles their double buffering.

Numbers are cost-model estimates (deterministic), never wall-clock times.
"""

from __future__ import annotations

import neuronxcc.nki as nki
import neuronxcc.nki.isa as nisa
import neuronxcc.nki.language as nl
from neuronxcc.nki import typing as nt

from nkisim import api
from nkisim.core.target import get as get_target
from nkisim.cost import report

H = 8192


def _why(prof: report.Profile) -> list[str]:
    return [line.strip() for line in prof.summary_text().splitlines() if line.strip().startswith("Why:")]


@nki.jit
def _gamma_load(gamma):
    """A ``[1, H]`` bf16 row loaded whole, as RMSNorm-Quant loads gamma, and stored back."""
    out = nl.ndarray((1, H), dtype=gamma.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((1, H), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma)
    nisa.dma_copy(dst=out, src=g)
    return out


@nki.jit
def _spread_load(gamma):
    """The same bytes over 128 partitions."""
    out = nl.ndarray((128, H // 128), dtype=gamma.dtype, buffer=nl.shared_hbm)
    g = nl.ndarray((128, H // 128), dtype=gamma.dtype, buffer=nl.sbuf)
    nisa.dma_copy(dst=g, src=gamma)
    nisa.dma_copy(dst=out, src=g)
    return out


def test_a_one_partition_dma_goes_in_4_byte_pieces_on_trn2_and_says_so():
    row = api.profile_kernel(_gamma_load, nt.tensor[[1, H], nl.bfloat16], target="trn2")
    spread = api.profile_kernel(_spread_load, nt.tensor[[128, H // 128], nl.bfloat16], target="trn2")
    d = get_target("trn2").params.dma
    piece_ns = d.descriptor_bytes / d.bytes_per_ns  # a DMA buffer's fixed cost on its queue
    pieces = H * 2 // d.trivial_dim_piece_bytes
    # two DMAs of H * 2 bytes on one queue, a descriptor per 4 bytes: at least 2 * 4096 * 11.1 ns
    assert row.estimate.total_us * 1000 >= 2 * pieces * piece_ns
    assert row.summary()["instructions_time_us"] > 10 * spread.summary()["instructions_time_us"]
    why = _why(row)
    assert any("line 40: 1 DMAs of a one-partition tile ([1, N]) went in 4-byte pieces" in w
               and "DMA buffer loads\", AWS's RMSNorm-Quant design doc" in w for w in why), why
    assert not any("4-byte pieces" in w for w in _why(spread))


def test_a_one_partition_dma_on_trn1_goes_whole():
    # AWS's trn1 Mamba tutorial loads [1, seq_len] rows at its published speed: no 4-byte pieces there
    row = api.profile_kernel(_gamma_load, nt.tensor[[1, H], nl.bfloat16], target="trn1")
    assert row.estimate.total_us < 30
    assert not any("4-byte pieces" in w for w in _why(row))


def _squares(read_back: bool):
    """Per 128-row tile of a [1024, 20480] fp32 input: its squares summed along the row by ScalarE
    (``activation_reduce``), written into an fp32 tile of squares that only ``read_back`` reads again."""

    @nki.jit
    def squares(x):
        out = nl.ndarray((1024, 1), dtype=nl.float32, buffer=nl.shared_hbm)
        for t in nl.affine_range(8):
            tile = nl.load(x[t * 128:(t + 1) * 128, :])
            sq = nl.ndarray((128, 20480), dtype=nl.float32, buffer=nl.sbuf)
            total = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.sbuf)
            sq[...] = nisa.activation_reduce(op=nl.square, data=tile, reduce_op=nl.add, reduce_res=total)
            if read_back:
                total[...] = nl.add(total, sq[:, 0:1])
            nl.store(out[t * 128:(t + 1) * 128, :], value=total)
        return out

    return squares


def test_a_tile_nobody_reads_leaves_sbuf_to_the_others_and_says_so():
    x = nt.tensor[[1024, 20480], nl.float32]
    unread = api.profile_kernel(_squares(False), x, target="trn2")
    read = api.profile_kernel(_squares(True), x, target="trn2")
    # 80 KiB per partition of input and 80 KiB of squares per iteration: counted together, even one buffer more than
    # one iteration's does not fit the 208 KiB of SBUF, and each load waits for the last iteration's ScalarE pass; the
    # unread squares leave the input tile its rotation, so loads overlap ScalarE
    assert unread.estimate.total_us < 0.85 * read.estimate.total_us
    why = _why(unread)
    assert any("a tile written here that no instruction reads held no SBUF beyond its write" in w
               and "so it took no room from the other tiles' buffers" in w for w in why), why
    assert not any("no instruction reads" in w for w in _why(read))
