import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super(Model, self).__init__()
        pass

    def forward(self, predictions, targets):
        return F.smooth_l1_loss(predictions, targets, beta=0.5, reduction='sum')


def get_inputs():
    return [torch.randn(16,), torch.randn(16,)]


def get_init_inputs():
    return []
