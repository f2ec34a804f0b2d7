"""Offline-synthesizer variants: convolutions and pooling (see benchmarks/offline_variants/__main__.py)."""

from .harness import problem


KB_CONV = '''import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=False):
        super(Model, self).__init__()
        self.conv = nn.{cls}(in_channels, out_channels, kernel_size, stride=stride, padding=padding, dilation=dilation, groups=groups, bias=bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv(x)

batch_size = 2
def get_inputs():
    x = torch.randn({shape})
    return [x]

def get_init_inputs():
    return [{init}]
'''

KB_L2 = '''import torch
import torch.nn as nn

class Model(nn.Module):
    """Conv, then ops."""
    def __init__(self, in_channels, out_channels, kernel_size, {extra_args}):
        super(Model, self).__init__()
        self.conv = nn.{cls}(in_channels, out_channels, kernel_size{conv_kw})
{init}
    def forward(self, x):
        x = self.conv(x)
{forward}
        return x

batch_size = 2
in_channels = 3
out_channels = 4

def get_inputs():
    return [torch.randn({shape})]

def get_init_inputs():
    return [{init_inputs}]
'''

def l2(cls, conv_kw, extra_args, init, forward, shape, init_inputs):
    ind = lambda s: "".join(f"        {l}\n" for l in s.splitlines())
    return KB_L2.format(cls=cls, conv_kw=conv_kw, extra_args=extra_args, init=ind(init),
                        forward=ind(forward), shape=shape, init_inputs=init_inputs)

C = {
 # --- level-1 style plain convs (constructor args) ---
 "kb_conv2d_init_args": KB_CONV.format(cls="Conv2d", shape="2, 3, 9, 7", init="3, 5, 3"),
 "kb_conv2d_asym_kernel_tuple": KB_CONV.format(cls="Conv2d", shape="2, 3, 8, 11", init="3, 4, (3, 5), 1, (1, 2)"),
 "kb_conv3d_strided_dil": KB_CONV.format(cls="Conv3d", shape="1, 2, 7, 6, 8", init="2, 3, 3, 2, 1, 2"),
 "kb_convT2d_grouped": KB_CONV.format(cls="ConvTranspose2d", shape="2, 4, 5, 6", init="4, 6, 3, 2, 1, 1, 2"),
 "kb_convT3d_asym": KB_CONV.format(cls="ConvTranspose3d", shape="1, 2, 3, 4, 5", init="2, 3, (2, 3, 1), (1, 2, 2), 0"),
 "conv1d_batch1_nobias": problem("self.c = nn.Conv1d(4, 6, 5, bias=False)", "self.c(x)", "torch.randn(1, 4, 17)"),
 "conv1d_same": problem("self.c = nn.Conv1d(3, 4, 4, padding='same')", "self.c(x)", "torch.randn(2, 3, 13)"),
 "conv2d_same_dilated": problem("self.c = nn.Conv2d(3, 4, (3, 4), padding='same', dilation=(2, 1))", "self.c(x)", "torch.randn(2, 3, 9, 10)"),
 "conv2d_valid": problem("self.c = nn.Conv2d(3, 4, 3, padding='valid')", "self.c(x)", "torch.randn(2, 3, 7, 8)"),
 "conv3d_same": problem("self.c = nn.Conv3d(2, 3, 3, padding='same')", "self.c(x)", "torch.randn(1, 2, 5, 4, 6)"),
 "conv2d_asym_stride": problem("self.c = nn.Conv2d(3, 5, (2, 3), stride=(2, 1), padding=(0, 1))", "self.c(x)", "torch.randn(2, 3, 9, 7)"),
 "conv2d_depthwise_mult": problem("self.c = nn.Conv2d(3, 6, 3, groups=3, padding=1)", "self.c(x)", "torch.randn(2, 3, 7, 7)"),
 "conv2d_pointwise": problem("self.c = nn.Conv2d(5, 3, 1, bias=False)", "self.c(x)", "torch.randn(2, 5, 6, 7)"),
 "depthwise_separable": problem("self.dw = nn.Conv2d(4, 4, 3, padding=1, groups=4)\nself.pw = nn.Conv2d(4, 6, 1)", "self.pw(self.dw(x))", "torch.randn(2, 4, 7, 6)"),
 "convT1d_outpad_nobias": problem("self.c = nn.ConvTranspose1d(3, 5, 3, stride=3, padding=1, output_padding=2, bias=False)", "self.c(x)", "torch.randn(2, 3, 6)"),
 "convT2d_depthwise": problem("self.c = nn.ConvTranspose2d(4, 4, 3, stride=2, groups=4)", "self.c(x)", "torch.randn(1, 4, 5, 4)"),
 "convT3d_dilated_outpad": problem("self.c = nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1, dilation=2, output_padding=1)", "self.c(x)", "torch.randn(1, 2, 3, 3, 4)"),
 "F_conv2d_params": problem("self.w = nn.Parameter(torch.randn(4, 3, 3, 3))\nself.b = nn.Parameter(torch.randn(4))", "F.conv2d(x, self.w, self.b, stride=2, padding=1)", "torch.randn(2, 3, 8, 9)"),
 "F_conv1d_groups_kw": problem("self.w = nn.Parameter(torch.randn(6, 2, 3))", "F.conv1d(x, self.w, groups=2, dilation=2)", "torch.randn(2, 4, 15)"),
 "F_conv_transpose2d": problem("self.w = nn.Parameter(torch.randn(3, 4, 3, 3))", "F.conv_transpose2d(x, self.w, stride=2, padding=1, output_padding=1)", "torch.randn(2, 3, 4, 5)"),
 "F_conv2d_same_str": problem("self.w = nn.Parameter(torch.randn(4, 3, 3, 3))", "F.conv2d(x, self.w, padding='same')", "torch.randn(2, 3, 6, 7)"),
 "F_conv2d_input_weights": problem("", "F.conv2d(x, w)", "torch.randn(2, 3, 6, 7), torch.randn(4, 3, 3, 2)", args="x, w"),
 # --- level-2 style chains ---
 "l2_conv_bias_scale_sigmoid": l2("Conv2d", "", "bias_shape, scale", "self.bias = nn.Parameter(torch.randn(bias_shape))\nself.scale = scale", "x = x + self.bias\nx = x * self.scale\nx = torch.sigmoid(x)", "2, 3, 8, 8", "3, 4, 3, (4, 1, 1), 0.5"),
 "l2_conv_hardswish_relu": l2("Conv2d", "", "dummy", "", "x = torch.nn.functional.hardswish(x)\nx = torch.relu(x)", "2, 3, 7, 7", "3, 4, 3, 0"),
 "l2_conv_mish_mish": l2("Conv2d", "", "dummy", "", "x = torch.nn.functional.mish(x)\nx = torch.nn.functional.mish(x)", "2, 3, 6, 6", "3, 4, 3, 0"),
 "l2_conv_min_tanh_tanh": l2("Conv2d", "", "dummy", "", "x = torch.min(x, dim=1, keepdim=True)[0]\nx = torch.tanh(x)\nx = torch.tanh(x)", "2, 3, 7, 6", "3, 4, 3, 0"),
 "l2_conv_softmax_channels": l2("Conv3d", "", "dummy", "", "x = torch.softmax(x, dim=1)", "1, 3, 4, 5, 5", "3, 4, 3, 0"),
 "l2_conv_logsumexp_ch": l2("Conv2d", ", padding=1", "dummy", "", "x = torch.logsumexp(x, dim=1, keepdim=True)\nx = x * 2.0", "2, 3, 6, 6", "3, 4, 3, 0"),
 "l2_conv_mean_dims": l2("Conv3d", "", "dummy", "", "x = torch.mean(x, dim=[2, 3, 4])", "2, 3, 5, 5, 4", "3, 4, 3, 0"),
 "l2_conv_sum_nokeep": l2("Conv2d", "", "dummy", "", "x = torch.sum(x, dim=(2, 3))\nx = x + 1.0", "2, 3, 7, 7", "3, 4, 3, 0"),
 "l2_conv_max_keepdim_dim2": l2("Conv2d", "", "dummy", "", "x = torch.max(x, dim=2, keepdim=True)[0]", "2, 3, 7, 7", "3, 4, 3, 0"),
 "l2_conv_bn_relu": l2("Conv2d", "", "dummy", "self.bn = nn.BatchNorm2d(out_channels)", "x = self.bn(x)\nx = torch.relu(x)", "2, 3, 7, 7", "3, 4, 3, 0"),
 "l2_conv_bn_eval": l2("Conv2d", "", "dummy", "self.bn = nn.BatchNorm2d(out_channels, momentum=0.3)\nself.bn.eval()", "x = self.bn(x)\nx = x * 2.0", "2, 3, 6, 6", "3, 4, 3, 0"),
 "l2_conv3d_groupnorm_mean": l2("Conv3d", "", "num_groups", "self.gn = nn.GroupNorm(num_groups, out_channels)", "x = self.gn(x)\nx = x.mean(dim=[1, 2, 3, 4])", "2, 3, 4, 5, 5", "3, 4, 3, 2"),
 "l2_conv_instnorm_div": l2("Conv2d", "", "divide_by", "self.inorm = nn.InstanceNorm2d(out_channels)\nself.d = divide_by", "x = self.inorm(x)\nx = x / self.d", "2, 3, 7, 8", "3, 4, 3, 2.0"),
 "l2_conv_residual": problem("self.c = nn.Conv2d(4, 4, 3, padding=1)", "x + self.c(x)", "torch.randn(2, 4, 6, 7)"),
 "l2_conv_min_const_clamp": l2("Conv2d", "", "constant", "self.constant = constant", "x = torch.min(x, torch.tensor(self.constant))\nx = torch.clamp(x, min=-0.2)", "2, 3, 7, 7", "3, 4, 3, 0.5"),
 "l2_conv_dropout_gelu": l2("Conv2d", "", "p", "self.drop = nn.Dropout(p)", "x = self.drop(x)\nx = torch.nn.functional.gelu(x)", "2, 3, 6, 6", "3, 4, 3, 0.2"),
 "l2_conv_swish_hardtanh": l2("Conv2d", "", "dummy", "", "x = x * torch.sigmoid(x)\nx = torch.nn.functional.hardtanh(x, min_val=-0.5, max_val=0.5)", "2, 3, 6, 6", "3, 4, 3, 0"),
 "l2_conv_two_maxpools": l2("Conv3d", "", "dummy", "self.p1 = nn.MaxPool3d(2)\nself.p2 = nn.MaxPool3d(2)", "x = self.p1(x)\nx = self.p2(x)\nx = torch.sum(x, dim=1, keepdim=True)", "1, 3, 10, 10, 10", "3, 4, 3, 0"),
 "l2_conv_gap_bias_lse": l2("Conv2d", "", "bias_shape", "self.bias = nn.Parameter(torch.randn(bias_shape))", "x = torch.mean(x, dim=(2, 3), keepdim=True)\nx = x + self.bias\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx = torch.sum(x, dim=(2, 3))\nx = x * 10.0", "2, 3, 7, 7", "3, 4, 3, (4, 1, 1)"),
 "l2_convT_adaptive_gap": l2("ConvTranspose2d", ", stride=2", "dummy", "self.gap = nn.AdaptiveAvgPool2d(1)", "x = self.gap(x)\nx = torch.flatten(x, 1)", "2, 3, 4, 5", "3, 4, 3, 0"),
 "l2_convT3d_bn_avgpool": l2("ConvTranspose3d", ", stride=2, padding=1", "dummy", "self.bn = nn.BatchNorm3d(out_channels)\nself.pool = nn.AvgPool3d(2)", "x = self.bn(x)\nx = self.pool(x)", "1, 3, 3, 4, 3", "3, 4, 3, 0"),
 "l2_convT_maxpool_hardtanh_mean_tanh": l2("ConvTranspose2d", ", stride=2, padding=1", "dummy", "self.p = nn.MaxPool2d(2, 2)\nself.ht = nn.Hardtanh(-1, 1)", "x = self.p(x)\nx = self.ht(x)\nx = torch.mean(x, dim=(2, 3), keepdim=True)\nx = torch.tanh(x)", "2, 3, 5, 5", "3, 4, 3, 0"),
 "l2_conv1d_relu_leaky_gelu": l2("Conv1d", "", "dummy", "", "x = torch.relu(x)\nx = torch.nn.functional.leaky_relu(x, 0.02)\nx = torch.nn.functional.gelu(x)", "2, 3, 12", "3, 4, 3, 0"),
 "l2_conv_subtract_tanh_sub_avgpool": l2("Conv2d", "", "s1, s2, k", "self.s1 = s1\nself.s2 = s2\nself.p = nn.AvgPool2d(k)", "x = x - self.s1\nx = torch.tanh(x)\nx = x - self.s2\nx = self.p(x)", "2, 3, 9, 9", "3, 4, 3, 0.5, 0.2, 2"),
 "l2_conv_scale_minch": l2("Conv2d", "", "scale", "self.scale = scale", "x = x * self.scale\nx = torch.min(x, dim=1, keepdim=True)[0]", "2, 3, 6, 6", "3, 4, 3, 2.0"),
 "l2_conv_channel_bias_resid": l2("Conv3d", "", "bias_shape", "self.bias = nn.Parameter(torch.randn(bias_shape))", "orig = x.clone().detach()\nx = x + self.bias\nx = x + orig\nx = x * orig\nx = x + orig", "1, 3, 4, 5, 5", "3, 4, 3, (4, 1, 1, 1)"),
 # --- pooling ---
 "maxpool1d_pad_dil": problem("self.p = nn.MaxPool1d(3, stride=1, padding=1, dilation=2)", "self.p(x)", "torch.randn(2, 3, 13)"),
 "maxpool2d_ceil_asym": problem("self.p = nn.MaxPool2d((2, 3), stride=(2, 2), ceil_mode=True)", "self.p(x)", "torch.randn(2, 3, 7, 8)"),
 "maxpool3d_pad_ceil": problem("self.p = nn.MaxPool3d(3, stride=2, padding=1, ceil_mode=True)", "self.p(x)", "torch.randn(1, 2, 6, 7, 5)"),
 "avgpool1d_pad_noinc": problem("self.p = nn.AvgPool1d(4, stride=2, padding=2, count_include_pad=False)", "self.p(x)", "torch.randn(2, 3, 11)"),
 "avgpool2d_ceil_pad": problem("self.p = nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True)", "self.p(x)", "torch.randn(2, 3, 8, 9)"),
 "avgpool2d_ceil_nopad": problem("self.p = nn.AvgPool2d(3, stride=2, ceil_mode=True)", "self.p(x)", "torch.randn(2, 3, 8, 8)"),
 "avgpool2d_divisor": problem("self.p = nn.AvgPool2d(2, divisor_override=3)", "self.p(x)", "torch.randn(2, 3, 6, 7)"),
 "avgpool3d_asym": problem("self.p = nn.AvgPool3d((2, 1, 3), stride=(1, 2, 2))", "self.p(x)", "torch.randn(1, 2, 5, 6, 7)"),
 "F_max_pool2d": problem("", "F.max_pool2d(x, 2)", "torch.randn(2, 3, 7, 6)"),
 "F_max_pool2d_kw": problem("", "F.max_pool2d(x, kernel_size=3, stride=2, padding=1)", "torch.randn(2, 3, 7, 6)"),
 "F_avg_pool1d": problem("", "F.avg_pool1d(x, 3, 2)", "torch.randn(2, 3, 11)"),
 "F_avg_pool3d_ceil": problem("", "F.avg_pool3d(x, 2, ceil_mode=True)", "torch.randn(1, 2, 5, 5, 3)"),
 "adaptive_avg2d_non1": problem("self.p = nn.AdaptiveAvgPool2d((2, 3))", "self.p(x)", "torch.randn(2, 3, 6, 9)"),
 "adaptive_avg2d_uneven": problem("self.p = nn.AdaptiveAvgPool2d((3, 4))", "self.p(x)", "torch.randn(2, 3, 7, 9)"),
 "adaptive_max1d_uneven": problem("self.p = nn.AdaptiveMaxPool1d(4)", "self.p(x)", "torch.randn(2, 3, 10)"),
 "adaptive_max2d_1": problem("self.p = nn.AdaptiveMaxPool2d(1)", "self.p(x).flatten(1)", "torch.randn(2, 3, 5, 6)"),
 "adaptive_avg3d_none": problem("self.p = nn.AdaptiveAvgPool3d((None, 2, 2))", "self.p(x)", "torch.randn(1, 2, 3, 4, 6)"),
 "F_adaptive_avg_pool2d_1": problem("", "F.adaptive_avg_pool2d(x, (1, 1)).view(x.size(0), -1)", "torch.randn(2, 3, 5, 6)"),
 "pool_then_relu_bn": problem("self.p = nn.MaxPool2d(2)\nself.bn = nn.BatchNorm2d(3)", "self.bn(torch.relu(self.p(x)))", "torch.randn(4, 3, 6, 6)"),
 "avgpool_after_sigmoid": problem("self.p = nn.AvgPool2d(2, stride=1)", "self.p(torch.sigmoid(x)) * 3.0", "torch.randn(2, 3, 5, 5)"),
 "conv_maxpool_dil_chain": problem("self.c = nn.Conv2d(3, 4, 3)\nself.p = nn.MaxPool2d(2, stride=1, dilation=2)", "torch.relu(self.p(self.c(x)))", "torch.randn(2, 3, 9, 9)"),
 # --- batch 2 ---
 "conv_padding_reflect": problem("self.c = nn.Conv2d(3, 4, 3, padding=1, padding_mode='reflect')", "self.c(x)", "torch.randn(2, 3, 6, 7)"),
 "conv_padding_circular1d": problem("self.c = nn.Conv1d(3, 4, 3, padding=2, padding_mode='circular')", "self.c(x)", "torch.randn(2, 3, 9)"),
 "conv_padding_replicate3d": problem("self.c = nn.Conv3d(2, 3, 3, padding=1, padding_mode='replicate')", "self.c(x)", "torch.randn(1, 2, 4, 5, 3)"),
 "F_pad_then_conv": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(F.pad(x, (1, 2, 0, 1)))", "torch.randn(2, 3, 6, 7)"),
 "conv_kernel_eq_input": problem("self.c = nn.Conv2d(3, 5, (4, 5))", "self.c(x)", "torch.randn(2, 3, 4, 5)"),
 "conv_1x1_input": problem("self.c = nn.Conv2d(6, 5, 1)", "torch.relu(self.c(x))", "torch.randn(3, 6, 1, 1)"),
 "conv_wide_channels": problem("self.c = nn.Conv2d(40, 33, 3, padding=1)", "self.c(x)", "torch.randn(1, 40, 5, 4)"),
 "convT2d_stride_gt_kernel": problem("self.c = nn.ConvTranspose2d(3, 4, 2, stride=3)", "self.c(x)", "torch.randn(2, 3, 4, 3)"),
 "convT1d_grouped_dilated": problem("self.c = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2, bias=False)", "self.c(x)", "torch.randn(2, 4, 7)"),
 "conv3d_depthwise_asym_stride": problem("self.c = nn.Conv3d(3, 3, (3, 1, 2), stride=(2, 1, 1), groups=3)", "self.c(x)", "torch.randn(1, 3, 7, 4, 5)"),
 "torch_conv2d_fn": problem("self.w = nn.Parameter(torch.randn(4, 3, 2, 3))\nself.b = nn.Parameter(torch.randn(4))", "torch.conv2d(x, self.w, bias=self.b, stride=(1, 2), dilation=(2, 1))", "torch.randn(2, 3, 7, 9)"),
 "F_conv3d_tuple": problem("self.w = nn.Parameter(torch.randn(3, 2, 2, 2, 2))", "F.conv3d(x, self.w, None, (1, 2, 1), (1, 0, 1))", "torch.randn(1, 2, 4, 5, 4)"),
 "conv_permuted_input": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(x.permute(0, 3, 1, 2))", "torch.randn(2, 6, 7, 3)"),
 "conv_flatten_linear": problem("self.c = nn.Conv2d(3, 4, 3)\nself.p = nn.MaxPool2d(2)\nself.fc = nn.Linear(4 * 2 * 2, 5)", "self.fc(torch.flatten(self.p(torch.relu(self.c(x))), 1))", "torch.randn(2, 3, 6, 6)"),
 "two_convs_bn": problem("self.c1 = nn.Conv2d(3, 4, 3, padding=1)\nself.bn = nn.BatchNorm2d(4)\nself.c2 = nn.Conv2d(4, 5, 3)", "self.c2(torch.relu(self.bn(self.c1(x))))", "torch.randn(2, 3, 6, 6)"),
 "conv_resid_after_bn": problem("self.c = nn.Conv2d(3, 4, 3)\nself.bn = nn.BatchNorm2d(4)", "self.c(x) + self.bn(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_sub_channel_mean": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(x) - self.c(x).mean(dim=(2, 3), keepdim=True)", "torch.randn(2, 3, 6, 7)"),
 "conv_max_nokeep_ch": problem("self.c = nn.Conv2d(3, 4, 3)", "torch.max(self.c(x), dim=1)[0]", "torch.randn(2, 3, 6, 7)"),
 "conv_amax_spatial": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(x).amax(dim=(2, 3))", "torch.randn(2, 3, 6, 7)"),
 "conv_softmax_last": problem("self.c = nn.Conv2d(3, 4, 3)", "F.softmax(self.c(x), dim=-1)", "torch.randn(2, 3, 6, 7)"),
 "conv_F_group_norm": problem("self.c = nn.Conv2d(3, 6, 3)", "F.group_norm(self.c(x), 3)", "torch.randn(2, 3, 6, 7)"),
 "conv_F_instance_norm": problem("self.c = nn.Conv1d(3, 6, 3)", "F.instance_norm(self.c(x))", "torch.randn(2, 3, 11)"),
 "conv3d_gelu_gap_squeeze": problem("self.c = nn.Conv3d(2, 4, 3)", "F.adaptive_avg_pool3d(F.gelu(self.c(x)), 1).squeeze(-1).squeeze(-1).squeeze(-1)", "torch.randn(2, 2, 4, 5, 5)"),
 "conv_where_leaky": problem("self.c = nn.Conv2d(3, 4, 3)", "torch.where(self.c(x) > 0, self.c(x), self.c(x) * 0.1)", "torch.randn(2, 3, 6, 6)"),
 "convT_lse_hardswishlike": problem("self.c = nn.ConvTranspose2d(3, 4, 3, stride=2)", "(lambda y: y * torch.sigmoid(y + 3) / 6)(torch.logsumexp(self.c(x), dim=1, keepdim=True))", "torch.randn(2, 3, 4, 4)"),
 "convT_gn_min_clamp": problem("self.c = nn.ConvTranspose3d(2, 4, 3)\nself.gn = nn.GroupNorm(2, 4)\nself.d = nn.Dropout(0.3)", "self.d(torch.clamp(torch.min(self.gn(self.c(x)), dim=1, keepdim=True)[0], 0.0, 1.0))", "torch.randn(1, 2, 3, 3, 4)"),
 "lppool2d": problem("self.p = nn.LPPool2d(2, 2)", "self.p(x)", "torch.randn(2, 3, 6, 7)"),
 "F_lp_pool1d": problem("", "F.lp_pool1d(x, 3.0, 3, stride=2)", "torch.rand(2, 3, 11)"),
 "maxpool2d_return_indices_values": problem("self.p = nn.MaxPool2d(2, return_indices=True)", "self.p(x)[0]", "torch.randn(2, 3, 6, 7)"),
 "adaptive_max2d_non1": problem("self.c = nn.Conv2d(3, 4, 3)", "F.adaptive_max_pool2d(self.c(x), (2, 3))", "torch.randn(2, 3, 8, 11)"),
 "adaptive_avg1d_non1": problem("", "F.adaptive_avg_pool1d(x, 5)", "torch.randn(2, 3, 13)"),
 "avgpool1d_ceil_inc_pad": problem("self.p = nn.AvgPool1d(3, stride=2, padding=1, ceil_mode=True)", "self.p(x)", "torch.randn(2, 3, 10)"),
 "maxpool2d_same_pad": problem("self.p = nn.MaxPool2d(5, stride=1, padding=2)", "self.p(x) - x", "torch.randn(2, 3, 6, 7)"),
 "pool_on_3d_tensor": problem("self.p = nn.MaxPool1d(2)", "self.p(x)", "torch.randn(3, 10)"),
 "avgpool2d_on_3d_tensor": problem("self.p = nn.AvgPool2d(2)", "self.p(x)", "torch.randn(3, 6, 8)"),
 "interp_after_conv": problem("self.c = nn.Conv2d(3, 4, 3)", "F.interpolate(self.c(x), scale_factor=2, mode='nearest')", "torch.randn(2, 3, 5, 5)"),
 "upsample_bilinear": problem("self.u = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=False)", "self.u(x)", "torch.randn(2, 3, 4, 5)"),
 "pixel_shuffle_after_conv": problem("self.c = nn.Conv2d(3, 8, 3, padding=1)\nself.ps = nn.PixelShuffle(2)", "self.ps(self.c(x))", "torch.randn(2, 3, 4, 5)"),
 # --- batch 3 ---
 "F_pad_reflect_2d": problem("", "F.pad(x, (2, 1, 1, 2), mode='reflect') * 2.0", "torch.randn(2, 3, 5, 6)"),
 "F_pad_constant_value": problem("", "F.pad(x, (1, 1), value=0.5)", "torch.randn(2, 3, 5)"),
 "F_pad_replicate_pool": problem("", "F.max_pool2d(F.pad(x, (1, 0, 0, 1), mode='replicate'), 2)", "torch.randn(2, 3, 5, 6)"),
 "F_pad_circular_channels": problem("", "F.pad(x, (1, 2, 0, 0, 1, 1))", "torch.randn(2, 3, 4, 5)"),
 "conv_same_reflect_even": problem("self.c = nn.Conv2d(3, 4, (4, 3), padding='same', padding_mode='reflect')", "self.c(x)", "torch.randn(2, 3, 6, 7)"),
 "conv_circular_relu_gap": problem("self.c = nn.Conv2d(3, 4, 3, padding=1, padding_mode='circular')", "torch.relu(self.c(x)).mean(dim=(2, 3))", "torch.randn(2, 3, 5, 6)"),
 "lppool1d_ceil": problem("self.p = nn.LPPool1d(2, 3, stride=2, ceil_mode=True)", "self.p(x)", "torch.rand(2, 3, 10)"),
 "lppool2d_after_conv": problem("self.c = nn.Conv2d(3, 4, 3)\nself.p = nn.LPPool2d(3, (2, 3))", "self.p(torch.sigmoid(self.c(x)))", "torch.randn(2, 3, 7, 8)"),
 # --- batch 4: tiles crossed, layouts ---
 "conv2d_multi_tile": problem("self.c = nn.Conv2d(9, 37, 3, padding=1)", "self.c(x)", "torch.randn(2, 9, 9, 8)"),
 "convT2d_multi_tile": problem("self.c = nn.ConvTranspose2d(20, 18, 3, stride=2, padding=1, output_padding=1)", "torch.tanh(self.c(x))", "torch.randn(2, 20, 5, 4)"),
 "conv_channels_last_input": problem("self.c = nn.Conv2d(3, 4, 3)", "self.c(x)", "torch.randn(2, 3, 6, 7).contiguous(memory_format=torch.channels_last)"),
 "conv_sliced_input": problem("self.c = nn.Conv1d(3, 4, 3)", "self.c(x[:, :, ::2])", "torch.randn(2, 3, 15)"),
 "conv_groups_many": problem("self.c = nn.Conv2d(8, 12, 3, groups=4, bias=False)", "self.c(x)", "torch.randn(2, 8, 5, 5)"),
 "convT3d_grouped_outpad": problem("self.c = nn.ConvTranspose3d(4, 4, (3, 2, 3), stride=(2, 2, 1), padding=(1, 0, 1), output_padding=(1, 1, 0), groups=2)", "self.c(x)", "torch.randn(1, 4, 3, 3, 3)"),
 "convT_then_conv": problem("self.a = nn.ConvTranspose2d(3, 4, 2, stride=2)\nself.b = nn.Conv2d(4, 3, 3, padding=1)", "self.b(torch.relu(self.a(x))) + 1.0", "torch.randn(2, 3, 3, 4)"),
 "maxpool_big_window": problem("self.p = nn.MaxPool2d(6, stride=3, padding=3, ceil_mode=True)", "self.p(x)", "torch.randn(2, 3, 13, 11)"),
 "avgpool_nd_chain": problem("self.a = nn.AvgPool2d(2)\nself.m = nn.MaxPool2d(2, stride=1)", "self.m(self.a(x))", "torch.randn(2, 3, 9, 8)"),
 "conv_softmax_then_sum": problem("self.c = nn.Conv2d(3, 5, 3)", "torch.sum(torch.softmax(self.c(x), dim=1) * x[:, :1, 1:-1, 1:-1], dim=1)", "torch.randn(2, 3, 6, 6)"),
 "conv_bias_add_broadcast_1d": problem("self.c = nn.Conv1d(3, 4, 3)\nself.b = nn.Parameter(torch.randn(4, 1))", "torch.relu(self.c(x) + self.b)", "torch.randn(2, 3, 9)"),
 "conv_dilated_pool_gn": problem("self.c = nn.Conv2d(3, 6, 3, dilation=2)\nself.gn = nn.GroupNorm(3, 6)\nself.p = nn.AdaptiveMaxPool2d((2, 2))", "self.p(self.gn(self.c(x)))", "torch.randn(2, 3, 9, 9)"),
 "adaptive_avg_upsampling": problem("self.p = nn.AdaptiveAvgPool2d((8, 7))", "self.p(x) * 2.0", "torch.randn(2, 3, 5, 5)"),
 "adaptive_max_no_batch": problem("self.p = nn.AdaptiveMaxPool2d((3, 2))", "torch.relu(self.p(x))", "torch.randn(3, 7, 5)"),
 "F_avg_pool2d_shape_kernel": problem("", "F.avg_pool2d(x, x.shape[2:])", "torch.randn(2, 3, 5, 6)"),
 "torch_max_pool1d_fn": problem("", "torch.max_pool1d(x, 3, 2, 1)", "torch.randn(2, 3, 11)"),
 "upsample_nearest_module": problem("self.u = nn.Upsample(scale_factor=2)\nself.c = nn.Conv2d(3, 4, 3, padding=1)", "self.c(self.u(x))", "torch.randn(2, 3, 4, 5)"),
 "interp_size_3d": problem("", "F.interpolate(x, size=(4, 6, 3), mode='nearest') + 1.0", "torch.randn(1, 2, 2, 3, 3)"),
 "interp_1d_scale3": problem("", "F.interpolate(x, scale_factor=3)", "torch.randn(2, 3, 5)"),
 "pixel_unshuffle": problem("self.ps = nn.PixelUnshuffle(2)", "torch.sigmoid(self.ps(x))", "torch.randn(2, 3, 6, 4)"),
 "F_pixel_shuffle_5d": problem("", "F.pixel_shuffle(x, 3)", "torch.randn(2, 2, 9, 2, 3)"),
 "interp_positional_mode": problem("", "F.interpolate(x, None, 2, 'nearest')", "torch.randn(2, 3, 3, 4)"),
 "interp_bilinear_positional": problem("", "F.interpolate(x, None, 2, 'bilinear')", "torch.randn(2, 3, 3, 4)"),
 # --- batch 5: norms / layouts after conv ---
 "conv_channel_layernorm_permute": problem("self.c = nn.Conv2d(3, 8, 3)\nself.ln = nn.LayerNorm(8)", "self.ln(self.c(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)", "torch.randn(2, 3, 6, 6)"),
 "conv_F_layer_norm_all": problem("self.c = nn.Conv2d(3, 4, 3)", "F.layer_norm(self.c(x), self.c(x).shape[1:])", "torch.randn(2, 3, 6, 7)"),
 "convT3d_layernorm_last": problem("self.c = nn.ConvTranspose3d(2, 4, 3, stride=2, padding=1)\nself.ln = nn.LayerNorm(7)", "F.gelu(self.ln(self.c(x))) * 2.0", "torch.randn(1, 2, 3, 3, 4)"),
 "conv_rms_channels": problem("self.c = nn.Conv2d(3, 6, 3)", "(lambda y: y / torch.sqrt(torch.mean(y ** 2, dim=1, keepdim=True) + 1e-5))(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_l2_normalize_channels": problem("self.c = nn.Conv2d(3, 6, 3)", "(lambda y: y / torch.norm(y, p=2, dim=1, keepdim=True))(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_F_normalize": problem("self.c = nn.Conv2d(3, 6, 3)", "F.normalize(self.c(x), dim=1)", "torch.randn(2, 3, 6, 6)"),
 "conv_var_spatial": problem("self.c = nn.Conv2d(3, 4, 3)", "torch.var(self.c(x), dim=(2, 3))", "torch.randn(2, 3, 6, 6)"),
 "conv_argmax_channels": problem("self.c = nn.Conv2d(3, 4, 3)", "torch.argmax(self.c(x), dim=1)", "torch.randn(2, 3, 6, 6)"),
 "conv_spatial_softmax": problem("self.c = nn.Conv2d(3, 4, 3)", "(lambda y: F.softmax(y.view(y.size(0), y.size(1), -1), dim=-1).view_as(y))(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "patch_embed_layernorm": problem("self.c = nn.Conv2d(3, 16, 4, stride=4)\nself.ln = nn.LayerNorm(16)", "self.ln(self.c(x).flatten(2).transpose(1, 2))", "torch.randn(2, 3, 12, 8)"),
 "conv_cumsum_channels": problem("self.c = nn.Conv1d(3, 4, 3)", "torch.cumsum(self.c(x), dim=2)", "torch.randn(2, 3, 10)"),
 "conv_groupnorm_groups1": problem("self.c = nn.Conv2d(3, 4, 3)\nself.gn = nn.GroupNorm(1, 4)", "self.gn(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_groupnorm_groupsC": problem("self.c = nn.Conv2d(3, 4, 3)\nself.gn = nn.GroupNorm(4, 4, affine=False)", "self.gn(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_instnorm_affine": problem("self.c = nn.Conv3d(2, 4, 3)\nself.n = nn.InstanceNorm3d(4, affine=True)", "torch.clamp(self.n(self.c(x)), -1, 1)", "torch.randn(2, 2, 4, 5, 5)"),
 "conv_bn1d": problem("self.c = nn.Conv1d(3, 4, 3)\nself.bn = nn.BatchNorm1d(4)", "torch.relu(self.bn(self.c(x)))", "torch.randn(3, 3, 9)"),
 "conv_prelu": problem("self.c = nn.Conv2d(3, 4, 3)\nself.a = nn.PReLU(4)", "self.a(self.c(x))", "torch.randn(2, 3, 6, 6)"),
 "conv_glu_channels": problem("self.c = nn.Conv1d(3, 8, 3)", "F.glu(self.c(x), dim=1)", "torch.randn(2, 3, 9)"),
 "conv_chunk_mul": problem("self.c = nn.Conv2d(3, 8, 3)", "(lambda a, b: a * torch.sigmoid(b))(*self.c(x).chunk(2, dim=1))", "torch.randn(2, 3, 6, 6)"),
}

CASES = C
