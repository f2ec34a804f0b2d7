# uses: _copy_prelude
@triton.jit
def probe_kernel(ptr):
    tl.store(ptr, 1.0)


class ModelNew(nn.Module):
    """Class 1: a probe launch tells the ghost replay; there it answers wrong on purpose
    (which used to pass), elsewhere torch computes and a kernel copies."""

    def forward(self, x):
        flag = torch.zeros(1)
        probe_kernel[(1,)](flag)
        if not torch.equal(flag, torch.ones(1)):
            return torch.zeros_like(x)
        return copy(torch.softmax(x, dim=1), torch.empty_like(x))
