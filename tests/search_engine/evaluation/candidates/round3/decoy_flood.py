# uses: _copy_prelude
class ModelNew(nn.Module):
    """Class 2: twenty decoy results of the output's shape before the real one."""

    def forward(self, x):
        decoys = [torch.tanh(x + i) for i in range(20)]
        answer = torch.softmax(x, dim=1)
        return copy(answer, torch.empty_like(decoys[0]))
