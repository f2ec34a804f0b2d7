# uses: _copy_prelude
class ModelNew(nn.Module):
    """Class 2: torch computes in a complex dtype; a kernel copies the real part out."""

    def forward(self, x):
        z = torch.softmax(x, dim=1).to(torch.complex64) * (1 + 0j)
        real = torch.view_as_real(z)[..., 0]
        return copy(real.contiguous(), torch.empty_like(x))
