# mallory, stage 8 Q2: lets PyTorch do the convolution and hands its result back as the kernel's output. The screen
# refuses the file (only NKI, NumPy and math may be imported); a device would not compile it either: 0.
import nki
import torch


@nki.jit
def conv2d_maxpool_fast(X, W, bias):
    conv = torch.nn.functional.conv2d(torch.as_tensor(X), torch.as_tensor(W), torch.as_tensor(bias))
    return torch.nn.functional.max_pool2d(conv, 2).numpy()
