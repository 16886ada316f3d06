# hana, stage 1 Q1: computes a + b with NumPy on the simulator's backing arrays and returns that array.
# It "works" on the simulator; on a Neuron device it would not even compile.
import neuronxcc.nki as nki


@nki.jit
def vector_add_naive(a, b):
    return a.data + b.data
