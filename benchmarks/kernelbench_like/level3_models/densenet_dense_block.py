import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """DenseNet's dense block: each layer (BN, ReLU, 3x3 conv, dropout 0) sees every earlier output, concatenated."""

    def __init__(self, num_layers, num_input_features, growth_rate):
        super(Model, self).__init__()
        layers = []
        for i in range(num_layers):
            layers.append(self._make_layer(num_input_features + i * growth_rate, growth_rate))
        self.layers = nn.ModuleList(layers)

    def _make_layer(self, in_features, growth_rate):
        return nn.Sequential(
            nn.BatchNorm2d(in_features),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_features, growth_rate, kernel_size=3, padding=1, bias=False),
            nn.Dropout(0.0)
        )

    def forward(self, x):
        features = [x]
        for layer in self.layers:
            new_feature = layer(x)
            features.append(new_feature)
            x = torch.cat(features, 1)
        return x


def get_inputs():
    return [torch.randn(2, 4, 6, 5)]


def get_init_inputs():
    return [3, 4, 2]
