import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """A VGG-style network: two conv-ReLU-conv-ReLU-maxpool stages, then a Linear classifier with dropout 0."""

    def __init__(self, num_classes=10):
        super(Model, self).__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 4, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.Conv2d(4, 4, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
            nn.Conv2d(4, 8, kernel_size=3, padding=1),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=2, stride=2),
        )
        self.classifier = nn.Sequential(
            nn.Linear(8 * 2 * 2, 16),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(16, num_classes)
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        x = self.classifier(x)
        return x


def get_inputs():
    return [torch.randn(2, 3, 8, 8)]


def get_init_inputs():
    return [10]
