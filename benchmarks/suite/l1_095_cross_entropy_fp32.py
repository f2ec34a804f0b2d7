"""Mean cross-entropy of fp32 logits against integer class labels, at level 1 #95's shape
(32768 samples x 4096 classes)."""
import torch
from torch import nn
from torch.nn import functional as F

FAMILY = "reduction"
DTYPE = torch.float32
batch_size = 32768
num_classes = 4096
TINY_SIZES = {"batch_size": 6, "num_classes": 20}
MIN_BYTES = batch_size * num_classes * DTYPE.itemsize + batch_size * 8 + DTYPE.itemsize
MIN_FLOPS = 0


class Model(nn.Module):
    def forward(self, predictions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(predictions, targets)


def get_inputs():
    return [torch.randn(batch_size, num_classes, dtype=DTYPE),
            torch.randint(0, num_classes, (batch_size,))]


def get_init_inputs():
    return []
