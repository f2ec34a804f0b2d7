import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self, num_classes):
        super(Model, self).__init__()
        self.conv1 = nn.Conv2d(in_channels=1, out_channels=4, kernel_size=3, stride=1)
        self.conv2 = nn.Conv2d(in_channels=4, out_channels=8, kernel_size=3, stride=1)
        self.fc1 = nn.Linear(in_features=8 * 2 * 2, out_features=16)
        self.fc2 = nn.Linear(in_features=16, out_features=num_classes)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(x, kernel_size=2, stride=2)
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, kernel_size=2, stride=2)
        x = x.view(-1, 8 * 2 * 2)
        x = F.relu(self.fc1(x))
        x = self.fc2(x)
        return x


batch_size = 2
num_classes = 10


def get_inputs():
    return [torch.randn(batch_size, 1, 14, 14)]


def get_init_inputs():
    return [num_classes]
