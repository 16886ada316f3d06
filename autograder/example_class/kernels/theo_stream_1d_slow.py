# theo, stage 3: correct but slow (FREE_DIM = 25, as ben's): his honest content, worth 2 of 4 points. His notebook's
# plain-Python cell (cells/theo_thief.py) tries to make it worth 4.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def stream_add_1d(a, b):
    chunk = 25
    p = nl.tile_size.pmax
    count = a.shape[0] // (p * chunk)
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    a_tiles = a.reshape((count, p, chunk))
    b_tiles = b.reshape((count, p, chunk))
    out_tiles = out.reshape((count, p, chunk))
    for t in nl.affine_range(count):
        nl.store(out_tiles[t], value=nl.add(nl.load(a_tiles[t]), nl.load(b_tiles[t])))
    return out
