"""The tiled layout copy candidate files use for transposed and channels-last operands."""

import os

import pytest
import torch

from search_engine.synthesis.offline.writers import layout_copy

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1"
                                and not torch.cuda.is_available(),
                                reason="needs Triton's interpreter or a GPU")


@pytest.fixture(scope="module")
def helper(tmp_path_factory):
    from .conftest import load_candidate
    module = load_candidate("import torch\nimport triton\nimport triton.language as tl\n"
                            + layout_copy.SOURCE, tmp_path_factory.mktemp("layout_copy"))
    return vars(module)


def _device():
    return "cuda" if torch.cuda.is_available() and os.environ.get("TRITON_INTERPRET") != "1" \
        else "cpu"


VIEWS = {
    "matrix transposed (a K-major B)": lambda d: torch.randn(70, 45, device=d).t(),
    "batched transpose (bmm's B)": lambda d: torch.randn(3, 33, 65, device=d).transpose(1, 2),
    "channels last 1-D": lambda d: torch.randn(2, 5, 130, device=d).permute(0, 2, 1),
    "channels last 2-D (H, W merge)": lambda d: torch.randn(2, 6, 9, 11, device=d).permute(
        0, 2, 3, 1),
    "channels last 3-D": lambda d: torch.randn(2, 3, 4, 5, 6, device=d).permute(0, 2, 3, 4, 1),
    "transposed conv weight (1, 2, 0)": lambda d: torch.randn(7, 3, 5, device=d).permute(
        1, 2, 0),
    "strided slice of a transpose": lambda d: torch.randn(40, 66, device=d)[:, ::2].t(),
    "batch outermost in memory is the tile's": lambda d: torch.randn(5, 17, 3, device=d)
    .permute(1, 2, 0),
    "a size-1 dim kept": lambda d: torch.randn(4, 1, 9, device=d).transpose(0, 2),
}


@pytest.mark.parametrize("name", sorted(VIEWS))
def test_copy_equals_torch_contiguous(helper, name):
    view = VIEWS[name](_device())
    out = helper["kh_contiguous"](view)
    assert out.is_contiguous() and out.shape == view.shape
    assert torch.equal(out, view.contiguous())


def test_contiguous_input_is_returned_uncopied(helper):
    x = torch.randn(4, 8, device=_device())
    assert helper["kh_contiguous"](x) is x


def test_four_runs_fall_back_to_torch(helper):
    view = torch.randn(2, 3, 4, 5, device=_device()).permute(3, 1, 0, 2)
    assert len(helper["kh_merged_runs"](view.shape, view.stride())) == 4
    assert torch.equal(helper["kh_contiguous"](view), view.contiguous())


def test_merged_runs_join_adjacent_dims(helper):
    view = torch.empty(2, 6, 9, 11).permute(0, 2, 3, 1)  # (H, W) adjacent in memory
    assert helper["kh_merged_runs"](view.shape, view.stride()) == [(2, 594), (99, 1), (6, 99)]


def test_only_files_that_copy_carry_the_helper():
    assert layout_copy.needed(["kh_b = kh_contiguous(kh_b.t())"])
    assert not layout_copy.needed(["kh_y = torch.empty((4, 4))"])


# -- candidate files that use it ----------------------------------------------------------

def _gpu_and_interpreter(source, **overlay):
    from search_engine.synthesis.offline.spaces import staged

    from .test_offline_staged import local_analysis
    an = local_analysis(source)
    return [staged.render(source, an, {**staged.default_params(an, target, "strict"),
                                       **overlay}) for target in ("interpreter", "h200")]


@pytest.mark.parametrize("init,expr,inputs", [
    ("self.conv = nn.Conv2d(16, 16, 3, padding=1)", "torch.relu(self.conv(x))",
     "torch.randn(2, 16, 6, 5)"),  # channels-last copies of x and the weight
    ("self.conv = nn.Conv1d(16, 16, 3)", "self.conv(x)", "torch.randn(2, 16, 9)"),
])
def test_channels_last_convs_copy_through_the_tiled_kernel(init, expr, inputs, tmp_path):
    from search_engine.evaluation.integrity.static_checks import run_static_checks

    from .conftest import run_candidate
    from .test_offline_staged import problem
    source = problem(init, expr, inputs)
    candidate, gpu = _gpu_and_interpreter(source)
    assert "kh_contiguous(x.permute(" in gpu and "def kh_layout_copy_kernel" in gpu
    assert not [f for f in run_static_checks(gpu, torch.float32, "strict")
                if f.severity != "warning"]
    expected, got, launched = run_candidate(source, candidate, tmp_path)
    assert "kh_layout_copy_kernel" in launched
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("init,inputs", [
    # groups of 8 input channels, stride 2: each program reads only its phase's taps
    ("self.conv = nn.ConvTranspose3d(16, 32, 3, stride=2, padding=1, groups=2, bias=False)",
     "torch.randn(2, 16, 3, 4, 3)"),
    ("self.conv = nn.ConvTranspose2d(4, 16, 3, stride=2, padding=1, output_padding=1)",
     "torch.randn(2, 4, 5, 4)"),
])
def test_strided_transposed_convs_with_few_channels_skip_taps_by_phase(init, inputs,
                                                                        tmp_path):
    from .conftest import run_candidate
    from .test_offline_staged import problem
    source = problem(init, "self.conv(x)", inputs)
    candidate, gpu = _gpu_and_interpreter(source)
    for rendered in (candidate, gpu):  # phased: the grid's third axis is group x phase
        assert "tl.program_id(2) // " in rendered and "tl.dot(" in rendered
    expected, got, _ = run_candidate(source, candidate, tmp_path)
    torch.testing.assert_close(got.double(), expected.double(), atol=1e-5, rtol=1e-5)
