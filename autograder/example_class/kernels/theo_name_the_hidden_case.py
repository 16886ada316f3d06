# theo, stage 1 Q1 (issue 28): names an exception class after the case it is traced for (shape and dtype) with
# type(), and raises it: were feedback to say "raised <class name>", it would spell out every hidden case's size.
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl  # noqa: F401


@nki.jit
def vector_add_naive(a, b):
    size = "x".join(str(n) for n in a.shape)
    raise type(f"Case_{size}_{a.dtype}", (Exception,), {})("named after the case")
