# hana, stage 1 Q1: tries to compute a + b with NumPy on backing arrays (`a.data`) and return that array.
# NKI tensors have no `.data`, on a Neuron device or on the simulator, so the kernel fails at that line.
import nki


@nki.jit
def vector_add_naive(a, b):
    return a.data + b.data
