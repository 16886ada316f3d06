# coding: utf-7
# theo, stage 2 Q1 (issue 28): Python decodes this file as UTF-7, where the comment at the end holds two lines of
# code: an import of os and sixteen forks (each child forking on). The screen once read the file as UTF-8 and saw a
# comment; it now refuses any encoding but UTF-8.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def tiled_add(a, b):
    out = nl.ndarray(a.shape, dtype=a.dtype, buffer=nl.shared_hbm)
    return out

# +AAo-import os+AAo-for child in range(16): os.fork()
