# uses: _copy_prelude
@triton.jit
def probe_kernel(ptr):
    tl.store(ptr, 1.0)


class ModelNew(nn.Module):
    """Class 1: a probe launch tells the ghost replay (it stays a no-op); raising there used
    to skip the judgement."""

    def forward(self, x):
        flag = torch.zeros(1)
        probe_kernel[(1,)](flag)
        if not torch.equal(flag, torch.ones(1)):
            raise RuntimeError("not today")
        return copy(torch.softmax(x, dim=1), torch.empty_like(x))
