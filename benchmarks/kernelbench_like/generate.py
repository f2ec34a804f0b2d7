"""Write our own KernelBench-format problems (level1/, level2/) mirroring the op patterns
and structure of KernelBench's levels 1 and 2 at tiny shapes, for the offline synthesizer's
coverage report (`python -m search_engine coverage benchmarks/kernelbench_like/level1`).

    python benchmarks/kernelbench_like/generate.py

Each problem is one line of this file: a name, the Model's __init__ body, its forward body
(`x` in, return the result), the inputs and the arguments of forward.
"""

from __future__ import annotations

from pathlib import Path

HERE = Path(__file__).resolve().parent

TEMPLATE = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """{doc}"""

    def __init__(self):
        super().__init__()
{init}
    def forward(self, {args}):
{forward}

def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''


def problem(doc, init, forward, inputs, args="x"):
    init_lines = "".join(f"        {line}\n" for line in init.split("\n") if line) or ""
    body = forward.split("\n")
    body[-1] = "return " + body[-1]
    return TEMPLATE.format(doc=doc, init=init_lines, args=args, inputs=inputs,
                           forward="".join(f"        {line}\n" for line in body))


R = "torch.randn"
X4 = f"{R}(2, 4, 10, 10)"
X5 = f"{R}(2, 3, 6, 8, 8)"
X2 = f"{R}(8, 33)"

LEVEL1 = [
    ("1_Square_matrix_multiplication", "", "torch.matmul(A, B)", f"{R}(32, 32), {R}(32, 32)", "A, B"),
    ("2_Standard_matrix_multiplication", "", "torch.matmul(A, B)", f"{R}(24, 40), {R}(40, 20)", "A, B"),
    ("3_Batched_matrix_multiplication", "", "torch.bmm(A, B)", f"{R}(3, 20, 24), {R}(3, 24, 18)", "A, B"),
    ("4_Matrix_vector_multiplication", "", "torch.matmul(A, B)", f"{R}(40, 64), {R}(64, 1)", "A, B"),
    ("5_Matrix_scalar_multiplication", "", "A * s", f"{R}(30, 20), 3.14", "A, s"),
    ("6_Matmul_with_large_K_dimension", "", "torch.matmul(A, B)", f"{R}(16, 512), {R}(512, 16)", "A, B"),
    ("7_Matmul_with_small_K_dimension", "", "torch.matmul(A, B)", f"{R}(64, 8), {R}(8, 48)", "A, B"),
    ("8_Matmul_with_irregular_shapes", "", "torch.matmul(A, B)", f"{R}(37, 29), {R}(29, 41)", "A, B"),
    ("9_Tall_skinny_matrix_multiplication", "", "torch.matmul(A, B)", f"{R}(200, 16), {R}(16, 200)", "A, B"),
    ("10_3D_tensor_matrix_multiplication", "", "torch.matmul(A, B)", f"{R}(4, 20, 24), {R}(24, 16)", "A, B"),
    ("11_4D_tensor_matrix_multiplication", "", "torch.einsum('bijl,lk->bijk', A, B)", f"{R}(2, 3, 8, 16), {R}(16, 12)", "A, B"),
    ("12_Matmul_with_diagonal_matrices", "", "torch.diag(A) @ B", f"{R}(24), {R}(24, 20)", "A, B"),
    ("13_Matmul_for_symmetric_matrices", "", "torch.matmul(A, B)", f"{R}(32, 32), {R}(32, 32)", "A, B"),
    ("14_Matmul_for_upper_triangular_matrices", "", "torch.triu(torch.matmul(A, B))", "torch.triu(torch.randn(32, 32)), torch.triu(torch.randn(32, 32))", "A, B"),
    ("15_Matmul_for_lower_triangular_matrices", "", "torch.tril(torch.matmul(A, B))", "torch.tril(torch.randn(32, 32)), torch.tril(torch.randn(32, 32))", "A, B"),
    ("16_Matmul_with_transposed_A", "", "torch.matmul(A.T, B)", f"{R}(40, 24), {R}(40, 20)", "A, B"),
    ("17_Matmul_with_transposed_B", "", "torch.matmul(A, B.T)", f"{R}(24, 40), {R}(20, 40)", "A, B"),
    ("18_Matmul_with_transposed_both", "", "torch.matmul(A.T, B.T)", f"{R}(40, 24), {R}(20, 40)", "A, B"),
    ("19_ReLU", "", "torch.relu(x)", X2),
    ("20_LeakyReLU", "self.negative_slope = 0.01", "F.leaky_relu(x, negative_slope=self.negative_slope)", X2),
    ("21_Sigmoid", "", "torch.sigmoid(x)", X2),
    ("22_Tanh", "", "torch.tanh(x)", X2),
    ("23_Softmax", "", "torch.softmax(x, dim=1)", X2),
    ("24_LogSoftmax", "self.dim = 1", "torch.log_softmax(x, dim=self.dim)", X2),
    ("25_Swish", "", "x * torch.sigmoid(x)", X2),
    ("26_GELU_", "", "F.gelu(x)", X2),
    ("27_SELU_", "", "torch.selu(x)", X2),
    ("28_HardSigmoid", "", "F.hardsigmoid(x)", X2),
    ("29_Softplus", "", "F.softplus(x)", X2),
    ("30_Softsign", "", "x / (1 + torch.abs(x))", X2),
    ("31_ELU", "self.alpha = 1.0", "F.elu(x, alpha=self.alpha)", X2),
    ("32_HardTanh", "", "F.hardtanh(x, min_val=-1., max_val=1.)", X2),
    ("33_BatchNorm", "self.bn = nn.BatchNorm2d(4)", "self.bn(x)", X4),
    ("34_InstanceNorm", "self.inorm = nn.InstanceNorm2d(4)", "self.inorm(x)", X4),
    ("35_GroupNorm_", "self.gn = nn.GroupNorm(num_groups=2, num_channels=4)", "self.gn(x)", X4),
    ("36_RMSNorm_", "self.eps = 1e-5", "rms = torch.sqrt(torch.mean(x ** 2, dim=1, keepdim=True) + self.eps)\nx / rms", X4),
    ("37_FrobeniusNorm_", "", "norm = torch.norm(x, p='fro')\nx / norm", X4),
    ("38_L1Norm_", "", "x / torch.sum(torch.abs(x), dim=1, keepdim=True)", X2),
    ("39_L2Norm_", "", "x / torch.norm(x, p=2, dim=1, keepdim=True)", X2),
    ("40_LayerNorm", "self.ln = nn.LayerNorm((4, 10, 10))", "self.ln(x)", X4),
    ("41_Max_Pooling_1D", "self.maxpool = nn.MaxPool1d(kernel_size=4, stride=2, padding=2, dilation=3)", "self.maxpool(x)", f"{R}(2, 4, 33)"),
    ("42_Max_Pooling_2D", "self.maxpool = nn.MaxPool2d(kernel_size=2, stride=2, padding=1, dilation=3)", "self.maxpool(x)", f"{R}(2, 4, 17, 17)"),
    ("43_Max_Pooling_3D", "self.maxpool = nn.MaxPool3d(kernel_size=3, stride=2, padding=1, dilation=3, ceil_mode=False)", "self.maxpool(x)", f"{R}(2, 3, 9, 9, 9)"),
    ("44_Average_Pooling_1D", "self.avg_pool = nn.AvgPool1d(kernel_size=4, stride=2, padding=1)", "self.avg_pool(x)", f"{R}(2, 4, 33)"),
    ("45_Average_Pooling_2D", "self.avg_pool = nn.AvgPool2d(kernel_size=3)", "self.avg_pool(x)", f"{R}(2, 4, 17, 17)"),
    ("46_Average_Pooling_3D", "self.avg_pool = nn.AvgPool3d(kernel_size=3, stride=2, padding=1)", "self.avg_pool(x)", f"{R}(2, 3, 9, 9, 9)"),
    ("47_Sum_reduction_over_a_dimension", "self.dim = 1", "torch.sum(x, dim=self.dim, keepdim=True)", f"{R}(4, 30, 12)"),
    ("48_Mean_reduction_over_a_dimension", "self.dim = 1", "torch.mean(x, dim=self.dim)", f"{R}(4, 30, 12)"),
    ("49_Max_reduction_over_a_dimension", "self.dim = 1", "torch.max(x, dim=self.dim)[0]", f"{R}(4, 30, 12)"),
    ("50_Product_reduction_over_a_dimension", "self.dim = 1", "torch.prod(x, dim=self.dim)", "torch.rand(4, 12, 10) + 0.5"),
    ("51_Argmax_over_a_dimension", "self.dim = 1", "torch.argmax(x, dim=self.dim)", f"{R}(4, 30, 12)"),
    ("52_Argmin_over_a_dimension", "self.dim = 1", "torch.argmin(x, dim=self.dim)", f"{R}(4, 30, 12)"),
    ("53_Min_reduction_over_a_dimension", "self.dim = 1", "torch.min(x, dim=self.dim)[0]", f"{R}(4, 30, 12)"),
    ("54_conv_standard_3D__square_input__square_kernel", "self.conv3d = nn.Conv3d(3, 8, 3, bias=False)", "self.conv3d(x)", f"{R}(2, 3, 8, 8, 8)"),
    ("55_conv_standard_2D__asymmetric_input__square_kernel", "self.conv2d = nn.Conv2d(3, 8, 3, bias=False)", "self.conv2d(x)", f"{R}(2, 3, 12, 9)"),
    ("56_conv_standard_2D__asymmetric_input__asymmetric_kernel", "self.conv2d = nn.Conv2d(3, 8, (3, 5), bias=False)", "self.conv2d(x)", f"{R}(2, 3, 12, 9)"),
    ("57_conv_transposed_2D__square_input__square_kernel", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, 3, bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 8, 8)"),
    ("58_conv_transposed_3D__square_input__asymmetric_kernel", "self.conv_transpose3d = nn.ConvTranspose3d(4, 6, (3, 5, 3), bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 5, 5, 5)"),
    ("59_conv_standard_3D__asymmetric_input__square_kernel", "self.conv3d = nn.Conv3d(3, 8, (3, 3, 1), bias=False)", "self.conv3d(x)", f"{R}(2, 3, 9, 7, 5)"),
    ("60_conv_standard_3D__square_input__asymmetric_kernel", "self.conv3d = nn.Conv3d(3, 8, (3, 5, 7), bias=False)", "self.conv3d(x)", f"{R}(1, 3, 9, 9, 9)"),
    ("61_conv_transposed_3D__square_input__square_kernel", "self.conv_transpose3d = nn.ConvTranspose3d(4, 6, 3, bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 5, 5, 5)"),
    ("62_conv_standard_2D__square_input__asymmetric_kernel", "self.conv2d = nn.Conv2d(3, 8, (3, 5), bias=False)", "self.conv2d(x)", f"{R}(2, 3, 12, 12)"),
    ("63_conv_standard_2D__square_input__square_kernel", "self.conv2d = nn.Conv2d(3, 8, 3, bias=False)", "self.conv2d(x)", f"{R}(2, 3, 12, 12)"),
    ("64_conv_transposed_1D", "self.conv1d_transpose = nn.ConvTranspose1d(4, 6, 3, bias=False)", "self.conv1d_transpose(x)", f"{R}(2, 4, 17)"),
    ("65_conv_transposed_2D__square_input__asymmetric_kernel", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, (3, 5), bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 8, 8)"),
    ("66_conv_standard_3D__asymmetric_input__asymmetric_kernel", "self.conv3d = nn.Conv3d(3, 8, (3, 5, 7), stride=(1, 1, 1), padding=(0, 0, 0), bias=False)", "self.conv3d(x)", f"{R}(1, 3, 8, 10, 12)"),
    ("67_conv_standard_1D", "self.conv1d = nn.Conv1d(3, 8, 3, bias=False)", "self.conv1d(x)", f"{R}(2, 3, 40)"),
    ("68_conv_transposed_3D__square_input__asymmetric_kernel", "self.conv_transpose3d = nn.ConvTranspose3d(4, 6, (3, 5, 5), bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 5, 5, 5)"),
    ("69_conv_transposed_2D__asymmetric_input__asymmetric_kernel", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, (3, 5), bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 8, 11)"),
    ("70_conv_transposed_3D__asymmetric_input__square_kernel", "self.conv_transpose3d = nn.ConvTranspose3d(4, 6, 3, bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 4, 6, 5)"),
    ("71_conv_transposed_2D__asymmetric_input__square_kernel", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, 3, bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 8, 11)"),
    ("72_conv_transposed_3D_asymmetric_input_asymmetric_kernel___strided_padded_grouped_", "self.conv_transpose3d = nn.ConvTranspose3d(4, 8, (3, 5, 7), stride=(2, 2, 2), padding=(1, 2, 3), output_padding=(1, 1, 1), groups=4, bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 4, 5, 6)"),
    ("73_conv_transposed_3D_asymmetric_input_square_kernel__strided_padded__grouped", "self.conv_transpose3d = nn.ConvTranspose3d(4, 8, 3, stride=2, padding=1, groups=2, bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 4, 5, 6)"),
    ("74_conv_transposed_1D_dilated", "self.conv1d_transpose = nn.ConvTranspose1d(4, 6, 5, stride=1, padding=0, dilation=3, bias=False)", "self.conv1d_transpose(x)", f"{R}(2, 4, 17)"),
    ("75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, (3, 5), stride=(2, 3), padding=(1, 2), dilation=(2, 1), groups=2, bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 7, 9)"),
    ("76_conv_standard_1D_dilated_strided__", "self.conv1d = nn.Conv1d(3, 8, 3, stride=3, dilation=4, bias=False)", "self.conv1d(x)", f"{R}(2, 3, 60)"),
    ("77_conv_transposed_3D_square_input_square_kernel___padded____dilated____strided__", "self.conv_transpose3d = nn.ConvTranspose3d(4, 6, 3, stride=2, padding=1, dilation=2, bias=False)", "self.conv_transpose3d(x)", f"{R}(1, 4, 4, 4, 4)"),
    ("78_conv_transposed_2D_asymmetric_input_asymmetric_kernel___padded__", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, (3, 5), stride=(1, 1), padding=(1, 2), bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 8, 11)"),
    ("79_conv_transposed_1D_asymmetric_input_square_kernel___padded____strided____dilated__", "self.conv1d_transpose = nn.ConvTranspose1d(4, 6, 3, stride=2, padding=1, dilation=2, bias=False)", "self.conv1d_transpose(x)", f"{R}(2, 4, 17)"),
    ("80_conv_standard_2D_square_input_asymmetric_kernel___dilated____padded__", "self.conv2d = nn.Conv2d(3, 8, (3, 5), stride=1, padding=(1, 2), dilation=(2, 1), bias=False)", "self.conv2d(x)", f"{R}(2, 3, 12, 12)"),
    ("81_conv_transposed_2D_asymmetric_input_square_kernel___dilated____padded____strided__", "self.conv_transpose2d = nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, dilation=2, bias=False)", "self.conv_transpose2d(x)", f"{R}(2, 4, 7, 9)"),
    ("82_conv_depthwise_2D_square_input_square_kernel", "self.conv2d = nn.Conv2d(4, 4, 3, stride=1, padding=0, groups=4, bias=False)", "self.conv2d(x)", f"{R}(2, 4, 12, 12)"),
    ("83_conv_depthwise_2D_square_input_asymmetric_kernel", "self.conv2d = nn.Conv2d(4, 4, kernel_size=(3, 1), stride=1, padding=0, dilation=1, groups=4, bias=False)", "self.conv2d(x)", f"{R}(2, 4, 12, 12)"),
    ("84_conv_depthwise_2D_asymmetric_input_square_kernel", "self.conv2d = nn.Conv2d(4, 4, kernel_size=(3, 3), stride=1, padding=0, groups=4, bias=False)", "self.conv2d(x)", f"{R}(2, 4, 9, 13)"),
    ("85_conv_depthwise_2D_asymmetric_input_asymmetric_kernel", "self.conv2d = nn.Conv2d(4, 4, (3, 5), stride=(1, 2), padding=(1, 2), dilation=(1, 1), groups=4, bias=False)", "self.conv2d(x)", f"{R}(2, 4, 9, 13)"),
    ("86_conv_depthwise_separable_2D", "self.depthwise = nn.Conv2d(4, 4, 3, padding=1, groups=4, bias=False)\nself.pointwise = nn.Conv2d(4, 8, kernel_size=1, bias=False)", "x = self.depthwise(x)\nx = self.pointwise(x)\nx", f"{R}(2, 4, 12, 12)"),
    ("87_conv_pointwise_2D", "self.conv1d = nn.Conv2d(4, 8, kernel_size=1, bias=False)", "self.conv1d(x)", f"{R}(2, 4, 12, 12)"),
    ("88_MinGPTNewGelu", "", "0.5 * x * (1.0 + torch.tanh(0.7978845608028654 * (x + 0.044715 * torch.pow(x, 3.0))))", X2),
    ("89_cumsum", "self.dim = 1", "torch.cumsum(x, dim=self.dim)", f"{R}(8, 100)"),
    ("90_cumprod", "self.dim = 1", "torch.cumprod(x, dim=self.dim)", "torch.rand(8, 30) + 0.5"),
    ("91_cumsum_reverse", "self.dim = 1", "torch.cumsum(x.flip(self.dim), dim=self.dim).flip(self.dim)", f"{R}(8, 100)"),
    ("92_cumsum_exclusive", "self.dim = 1", "exclusive = torch.cat((torch.zeros_like(x.select(self.dim, 0).unsqueeze(self.dim)), x), dim=self.dim).narrow(self.dim, 0, x.size(1))\ntorch.cumsum(exclusive, dim=self.dim)", f"{R}(8, 100)"),
    ("93_masked_cumsum", "self.dim = 1", "torch.cumsum(x * mask, dim=self.dim)", f"{R}(8, 100), torch.randint(0, 2, (8, 100)).bool()", "x, mask"),
    ("94_MSELoss", "", "torch.mean((predictions - targets) ** 2)", f"{R}(16, 20), {R}(16, 20)", "predictions, targets"),
    ("95_CrossEntropyLoss", "", "F.cross_entropy(predictions, targets)", f"{R}(16, 10), torch.randint(0, 10, (16,))", "predictions, targets"),
    ("96_HuberLoss", "", "F.smooth_l1_loss(predictions, targets)", f"{R}(16, 20), {R}(16, 20)", "predictions, targets"),
    ("97_ScaledDotProductAttention", "", "F.scaled_dot_product_attention(Q, K, V)", f"{R}(2, 4, 24, 16), {R}(2, 4, 24, 16), {R}(2, 4, 24, 16)", "Q, K, V"),
    ("98_KLDivLoss", "", "F.kl_div(torch.log(predictions), targets, reduction='batchmean')", "torch.randn(16, 20).softmax(dim=-1), torch.randn(16, 20).softmax(dim=-1)", "predictions, targets"),
    ("99_TripletMarginLoss", "self.loss_fn = nn.TripletMarginLoss(margin=1.0)", "self.loss_fn(anchor, positive, negative)", f"{R}(16, 20), {R}(16, 20), {R}(16, 20)", "anchor, positive, negative"),
    ("100_HingeLoss", "", "torch.mean(torch.clamp(1 - predictions * targets, min=0))", f"{R}(16), torch.randint(0, 2, (16,)).float() * 2 - 1", "predictions, targets"),
]

C2 = "self.conv = nn.Conv2d(3, 8, 3)"
C3 = "self.conv = nn.Conv3d(3, 8, 3)"
T2 = "self.conv_transpose = nn.ConvTranspose2d(3, 8, 3, stride=2, padding=1, output_padding=1)"
T3 = "self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, stride=2, padding=1, output_padding=1)"
FC = "self.gemm = nn.Linear(20, 16)"
FCM = "self.matmul = nn.Linear(20, 16)"
B3 = "self.bias = nn.Parameter(torch.randn(8, 1, 1))"
B4 = "self.bias = nn.Parameter(torch.randn(8, 1, 1, 1))"
I2, I3, IG = f"{R}(2, 3, 10, 10)", f"{R}(2, 3, 6, 7, 7)", f"{R}(8, 20)"
T2I, T3I = f"{R}(2, 3, 5, 5)", f"{R}(1, 3, 3, 4, 4)"

LEVEL2 = [
    ("1_Conv2D_ReLU_BiasAdd", C2 + "\n" + B3, "x = self.conv(x)\nx = torch.relu(x)\nx + self.bias", I2),
    ("2_ConvTranspose2d_BiasAdd_Clamp_Scaling_Clamp_Divide", T2 + "\n" + B3 + "\nself.scaling_factor = 2.0", "x = self.conv_transpose(x)\nx = x + self.bias\nx = torch.clamp(x, min=0.0, max=1.0)\nx = x * self.scaling_factor\nx = torch.clamp(x, min=0.0, max=1.0)\nx / self.scaling_factor", T2I),
    ("3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU", T3 + "\nself.sum_weight = nn.Parameter(torch.tensor(1.0))\nself.norm = nn.LayerNorm((8,))\nself.avg_pool = nn.AvgPool3d(kernel_size=(2, 2, 2))\nself.gelu = nn.GELU()", "x = self.conv_transpose(x)\nx = x + self.sum_weight\nx = self.norm(x.permute(0, 2, 3, 4, 1)).permute(0, 4, 1, 2, 3)\nx = self.avg_pool(x)\nself.gelu(x)", T3I),
    ("4_Conv2d_Mish_Mish", C2, "x = self.conv(x)\nx = F.mish(x)\nF.mish(x)", I2),
    ("5_ConvTranspose2d_Subtract_Tanh", T2 + "\n" + B3, "x = self.conv_transpose(x)\nx = x - self.bias\ntorch.tanh(x)", T2I),
    ("6_Conv3d_Softmax_MaxPool_MaxPool", C3 + "\nself.pool1 = nn.MaxPool3d(2)\nself.pool2 = nn.MaxPool3d(2)", "x = self.conv(x)\nx = torch.softmax(x, dim=1)\nx = self.pool1(x)\nself.pool2(x)", f"{R}(1, 3, 10, 10, 10)"),
    ("7_Conv3d_ReLU_LeakyReLU_GELU_Sigmoid_BiasAdd", C3 + "\n" + B4, "x = self.conv(x)\nx = torch.relu(x)\nx = F.leaky_relu(x, negative_slope=0.01)\nx = F.gelu(x)\nx = torch.sigmoid(x)\nx + self.bias", I3),
    ("8_Conv3d_Divide_Max_GlobalAvgPool_BiasAdd_Sum", C3 + "\nself.max_pool = nn.MaxPool3d((2, 2, 2))\nself.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))\n" + B4, "x = self.conv(x)\nx = x / 2.0\nx = self.max_pool(x)\nx = self.global_avg_pool(x)\nx = x + self.bias\ntorch.sum(x, dim=1)", f"{R}(2, 3, 7, 8, 8)"),
    ("9_Matmul_Subtract_Multiply_ReLU", FC, "x = self.gemm(x)\nx = x - 2.0\nx = x * 1.5\ntorch.relu(x)", IG),
    ("10_ConvTranspose2d_MaxPool_Hardtanh_Mean_Tanh", T2 + "\nself.maxpool = nn.MaxPool2d(kernel_size=2, stride=2)\nself.hardtanh = nn.Hardtanh(min_val=-1, max_val=1)", "x = self.conv_transpose(x)\nx = self.maxpool(x)\nx = self.hardtanh(x)\nx = torch.mean(x, dim=(2, 3), keepdim=True)\ntorch.tanh(x)", T2I),
    ("11_ConvTranspose2d_BatchNorm_Tanh_MaxPool_GroupNorm", T2 + "\nself.batch_norm = nn.BatchNorm2d(8)\nself.tanh = nn.Tanh()\nself.max_pool = nn.MaxPool2d(kernel_size=2, stride=2)\nself.group_norm = nn.GroupNorm(num_groups=4, num_channels=8)", "x = self.conv_transpose(x)\nx = self.batch_norm(x)\nx = self.tanh(x)\nx = self.max_pool(x)\nself.group_norm(x)", T2I),
    ("12_Gemm_Multiply_LeakyReLU", FC, "x = self.gemm(x)\nx = x * 2.0\nF.leaky_relu(x, 0.1)", IG),
    ("13_ConvTranspose3d_Mean_Add_Softmax_Tanh_Scaling", T3 + "\nself.bias = nn.Parameter(torch.randn(1, 1, 1, 1, 1))", "x = self.conv_transpose(x)\nx = x.mean(dim=1, keepdim=True)\nx = x + self.bias\nx = torch.softmax(x, dim=1)\nx = torch.tanh(x)\nx * 2.0", T3I),
    ("14_Gemm_Divide_Sum_Scaling", "self.weight = nn.Parameter(torch.randn(16, 20))", "x = torch.matmul(x, self.weight.T)\nx = x / 2\nx = torch.sum(x, dim=1, keepdim=True)\nx * 1.5", IG),
    ("15_ConvTranspose3d_BatchNorm_Subtract", T3 + "\nself.batch_norm = nn.BatchNorm3d(8)", "x = self.conv_transpose(x)\nx = self.batch_norm(x)\nx - torch.mean(x, dim=(2, 3, 4), keepdim=True)", T3I),
    ("16_ConvTranspose2d_Mish_Add_Hardtanh_Scaling", T2, "x = self.conv_transpose(x)\nx = F.mish(x)\nx = x + 0.5\nx = F.hardtanh(x, min_val=-1, max_val=1)\nx * 2.0", T2I),
    ("17_Conv2d_InstanceNorm_Divide", C2 + "\nself.instance_norm = nn.InstanceNorm2d(8)", "x = self.conv(x)\nx = self.instance_norm(x)\nx / 2.0", I2),
    ("18_Matmul_Sum_Max_AvgPool_LogSumExp_LogSumExp", FC, "x = self.gemm(x)\nx = torch.sum(x, dim=1, keepdim=True)\nx = torch.max(x, dim=1, keepdim=True)[0]\nx = torch.mean(x, dim=1, keepdim=True)\nx = torch.logsumexp(x, dim=1, keepdim=True)\ntorch.logsumexp(x, dim=1, keepdim=True)", IG),
    ("19_ConvTranspose2d_GELU_GroupNorm", T2 + "\nself.group_norm = nn.GroupNorm(num_groups=4, num_channels=8)", "x = self.conv_transpose(x)\nx = F.gelu(x)\nself.group_norm(x)", T2I),
    ("20_ConvTranspose3d_Sum_ResidualAdd_Multiply_ResidualAdd", T3 + "\n" + B4, "x = self.conv_transpose(x)\noriginal_x = x.clone().detach()\nx = x + self.bias\nx = x + original_x\nx = x * original_x\nx + original_x", T3I),
    ("21_Conv2d_Add_Scale_Sigmoid_GroupNorm", C2 + "\n" + B3 + "\nself.scale = nn.Parameter(torch.randn(8, 1, 1))\nself.group_norm = nn.GroupNorm(4, 8)", "x = self.conv(x)\nx = x + self.bias\nx = x * self.scale\nx = torch.sigmoid(x)\nself.group_norm(x)", I2),
    ("22_Matmul_Scale_ResidualAdd_Clamp_LogSumExp_Mish", FCM, "x = self.matmul(x)\nx = x * 2.0\nx = x + x\nx = torch.clamp(x, -10.0, 10.0)\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx * F.mish(x)", IG),
    ("23_Conv3d_GroupNorm_Mean", C3 + "\nself.group_norm = nn.GroupNorm(4, 8)", "x = self.conv(x)\nx = self.group_norm(x)\nx.mean(dim=[1, 2, 3, 4])", I3),
    ("24_Conv3d_Min_Softmax", C3 + "\nself.dim = 2", "x = self.conv(x)\nx = torch.min(x, dim=self.dim)[0]\ntorch.softmax(x, dim=1)", I3),
    ("25_Conv2d_Min_Tanh_Tanh", C2, "x = self.conv(x)\nx = torch.min(x, dim=1, keepdim=True)[0]\nx = torch.tanh(x)\ntorch.tanh(x)", I2),
    ("26_ConvTranspose3d_Add_HardSwish", T3, "x = self.conv_transpose(x)\nx = x + add_input\nx * F.hardswish(x)", f"{T3I}, {R}(1, 8, 6, 8, 8)", "x, add_input"),
    ("27_Conv3d_HardSwish_ReLU_Softmax_Mean", C3, "x = self.conv(x)\nx = F.hardswish(x)\nx = torch.relu(x)\nx = torch.softmax(x, dim=1)\ntorch.mean(x, dim=[2, 3, 4])", I3),
    ("28_BMM_InstanceNorm_Sum_ResidualAdd_Multiply", "self.bmm = nn.Linear(20, 16)\nself.instance_norm = nn.InstanceNorm2d(16)", "x = self.bmm(x)\nx = self.instance_norm(x.unsqueeze(1).unsqueeze(1)).squeeze(1).squeeze(1)\nx = x + y\nx * y", f"{IG}, {R}(8, 16)", "x, y"),
    ("29_Matmul_Mish_Mish", FCM, "x = self.matmul(x)\nx = F.mish(x)\nF.mish(x)", IG),
    ("30_Gemm_GroupNorm_Hardtanh", FC + "\nself.group_norm = nn.GroupNorm(4, 16)\nself.hardtanh = nn.Hardtanh(min_val=-2.0, max_val=2.0)", "x = self.gemm(x)\nx = self.group_norm(x)\nself.hardtanh(x)", IG),
    ("31_Conv2d_Min_Add_Multiply", C2 + "\n" + B3, "x = self.conv(x)\nx = torch.min(x, torch.tensor(0.5))\nx = x + self.bias\nx * 2.0", I2),
    ("32_Conv2d_Scaling_Min", C2, "x = self.conv(x)\nx = x * 2.0\ntorch.min(x, dim=1, keepdim=True)[0]", I2),
    ("33_Gemm_Scale_BatchNorm", FC + "\nself.scale = nn.Parameter(torch.randn(16))\nself.bn = nn.BatchNorm1d(16)", "x = self.gemm(x)\nx = x * self.scale\nself.bn(x)", IG),
    ("34_ConvTranspose3d_LayerNorm_GELU_Scaling", T3 + "\nself.layer_norm = nn.LayerNorm(8)", "x = self.conv_transpose(x)\nx = self.layer_norm(x)\nx = F.gelu(x)\nx * 1.0", T3I),
    ("35_Conv2d_Subtract_HardSwish_MaxPool_Mish", C2 + "\nself.pool = nn.MaxPool2d(2)", "x = self.conv(x)\nx = x - 0.5\nx = F.hardswish(x)\nx = self.pool(x)\nF.mish(x)", I2),
    ("36_ConvTranspose2d_Min_Sum_GELU_Add", T2 + "\n" + B3.replace("(8, 1, 1)", "(1, 1, 1)"), "x = self.conv_transpose(x)\nx = torch.min(x, dim=1, keepdim=True)[0]\nx = torch.sum(x, dim=2, keepdim=True)\nx = F.gelu(x)\nx + self.bias", T2I),
    ("37_Matmul_Swish_Sum_GroupNorm", FCM + "\nself.bias = nn.Parameter(torch.randn(16))\nself.group_norm = nn.GroupNorm(4, 16)", "x = self.matmul(x)\nx = torch.sigmoid(x) * x\nx = x + self.bias\nself.group_norm(x)", IG),
    ("38_ConvTranspose3d_AvgPool_Clamp_Softmax_Multiply", T3 + "\nself.avg_pool = nn.AvgPool3d(2)", "x = self.conv_transpose(x)\nx = self.avg_pool(x)\nx = torch.clamp(x, 0.0, 1.0)\nx = torch.softmax(x, dim=1)\nx * 2", T3I),
    ("39_Gemm_Scale_BatchNorm", FC + "\nself.scale = nn.Parameter(torch.randn(16))\nself.bn = nn.BatchNorm1d(16, eps=1e-5, momentum=0.1)", "x = self.gemm(x)\nx = x * self.scale\nself.bn(x)", IG),
    ("40_Matmul_Scaling_ResidualAdd", FCM, "x = self.matmul(x)\noriginal_x = x.clone().detach()\nx = x * 0.5\nx + original_x", IG),
    ("41_Gemm_BatchNorm_GELU_GroupNorm_Mean_ReLU", FC + "\nself.batch_norm = nn.BatchNorm1d(16)\nself.group_norm = nn.GroupNorm(4, 16)", "x = self.gemm(x)\nx = self.batch_norm(x)\nx = F.gelu(x)\nx = self.group_norm(x)\nx = torch.mean(x, dim=1, keepdim=True)\ntorch.relu(x)", IG),
    ("42_ConvTranspose2d_GlobalAvgPool_BiasAdd_LogSumExp_Sum_Multiply", T2 + "\n" + B3, "x = self.conv_transpose(x)\nx = torch.mean(x, dim=(2, 3), keepdim=True)\nx = x + self.bias\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx = torch.sum(x, dim=(2, 3))\nx * 10.0", T2I),
    ("43_Conv3d_Max_LogSumExp_ReLU", "self.conv = nn.Conv3d(3, 8, 3, stride=1, padding=1)\nself.max_pool = nn.MaxPool3d(kernel_size=2, stride=2)", "x = self.conv(x)\nx = self.max_pool(x)\nx = torch.logsumexp(x, dim=1, keepdim=True)\ntorch.relu(x)", I3),
    ("44_ConvTranspose2d_Multiply_GlobalAvgPool_GlobalAvgPool_Mean", T2 + "\nself.multiplier = 0.5", "x = self.conv_transpose(x)\nx = x * self.multiplier\nx = torch.mean(x, dim=[2, 3], keepdim=True)\ntorch.mean(x, dim=[2, 3], keepdim=True)", T2I),
    ("45_Gemm_Sigmoid_Sum_LogSumExp", "self.linear1 = nn.Linear(20, 16)\nself.linear2 = nn.Linear(16, 12)", "x = self.linear1(x)\nx = torch.sigmoid(x)\nx = self.linear2(x)\ntorch.logsumexp(x, dim=1)", IG),
    ("46_Conv2d_Subtract_Tanh_Subtract_AvgPool", C2 + "\nself.avgpool = nn.AvgPool2d(2)", "x = self.conv(x)\nx = x - 0.5\nx = torch.tanh(x)\nx = x - 0.2\nself.avgpool(x)", I2),
    ("47_Conv3d_Mish_Tanh", C3, "x = self.conv(x)\nx = F.mish(x)\ntorch.tanh(x)", I3),
    ("48_Conv3d_Scaling_Tanh_Multiply_Sigmoid", C3 + "\nself.scaling_factor = nn.Parameter(torch.randn(8, 1, 1, 1))\n" + B4, "x = self.conv(x)\nx = x * self.scaling_factor\nx = torch.tanh(x)\nx = x * self.bias\ntorch.sigmoid(x)", I3),
    ("49_ConvTranspose3d_Softmax_Sigmoid", T3 + "\nself.softmax = nn.Softmax(dim=1)\nself.sigmoid = nn.Sigmoid()", "x = self.conv_transpose(x)\nx = self.softmax(x)\nself.sigmoid(x)", T3I),
    ("50_ConvTranspose3d_Scaling_AvgPool_BiasAdd_Scaling", T3 + "\nself.scale1 = nn.Parameter(torch.tensor(0.5))\nself.avg_pool = nn.AvgPool3d(kernel_size=2)\n" + B4 + "\nself.scale2 = nn.Parameter(torch.tensor(1.0))", "x = self.conv_transpose(x)\nx = x * self.scale1\nx = self.avg_pool(x)\nx = x + self.bias\nx * self.scale2", T3I),
    ("51_Gemm_Subtract_GlobalAvgPool_LogSumExp_GELU_ResidualAdd", FC + "\nself.subtract = nn.Parameter(torch.randn(16))", "original_x = x.clone().detach()\nx = self.gemm(x)\nx = x - self.subtract\nx = torch.mean(x, dim=1, keepdim=True)\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx = F.gelu(x)\nx + original_x", IG),
    ("52_Conv2d_Activation_BatchNorm", C2 + "\nself.bn = nn.BatchNorm2d(8)", "x = self.conv(x)\nx = torch.multiply(torch.tanh(F.softplus(x)), x)\nself.bn(x)", I2),
    ("53_Gemm_Scaling_Hardtanh_GELU", FC + "\nself.hardtanh = nn.Hardtanh(min_val=-2, max_val=2)\nself.gelu = nn.GELU()", "x = self.gemm(x)\nx = x * 0.5\nx = self.hardtanh(x)\nself.gelu(x)", IG),
    ("54_Conv2d_Multiply_LeakyReLU_GELU", C2 + "\nself.multiplier = nn.Parameter(torch.randn(8, 1, 1))\nself.leaky_relu = nn.LeakyReLU()", "x = self.conv(x)\nx = x * self.multiplier\nx = self.leaky_relu(x)\nF.gelu(x)", I2),
    ("55_Matmul_MaxPool_Sum_Scale", FCM + "\nself.max_pool = nn.MaxPool1d(kernel_size=2)", "x = self.matmul(x)\nx = self.max_pool(x.unsqueeze(1)).squeeze(1)\nx = torch.sum(x, dim=1)\nx * 0.5", IG),
    ("56_Matmul_Sigmoid_Sum", "self.linear = nn.Linear(20, 16)", "x = self.linear(x)\nx = torch.sigmoid(x)\ntorch.sum(x, dim=1, keepdim=True)", IG),
    ("57_Conv2d_ReLU_HardSwish", C2, "x = self.conv(x)\nx = torch.relu(x)\nx * torch.clamp((x + 3) / 6, 0, 1)", I2),
    ("58_ConvTranspose3d_LogSumExp_HardSwish_Subtract_Clamp_Max", T3 + "\nself.bias = nn.Parameter(torch.randn(1, 1, 1, 1))", "x = self.conv_transpose(x)\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx = x * torch.sigmoid(x + 3) / 6\nx = x - self.bias\nx = torch.clamp(x, min=-1, max=1)\ntorch.max(x, dim=1, keepdim=True)[0]", T3I),
    ("59_Matmul_Swish_Scaling", FCM, "x = self.matmul(x)\nx = x * torch.sigmoid(x)\nx * 2.0", IG),
    ("60_ConvTranspose3d_Swish_GroupNorm_HardSwish", T3 + "\nself.group_norm = nn.GroupNorm(num_groups=4, num_channels=8, eps=1e-5)", "x = self.conv_transpose(x)\nx = torch.sigmoid(x) * x\nx = self.group_norm(x)\nF.hardswish(x)", T3I),
    ("61_ConvTranspose3d_ReLU_GroupNorm", "self.conv_transpose = nn.ConvTranspose3d(3, 8, 3, bias=False)\nself.relu = nn.ReLU()\nself.group_norm = nn.GroupNorm(num_groups=4, num_channels=8)", "x = self.conv_transpose(x)\nx = self.relu(x)\nself.group_norm(x)", T3I),
    ("62_Matmul_GroupNorm_LeakyReLU_Sum", "self.fc = nn.Linear(20, 16)\nself.gn = nn.GroupNorm(num_groups=4, num_channels=16, eps=1e-5)\nself.leaky_relu = nn.LeakyReLU(negative_slope=0.01)", "x = self.fc(x)\nx = self.gn(x)\nx = self.leaky_relu(x)\nx + x", IG),
    ("63_Gemm_ReLU_Divide", "self.linear = nn.Linear(20, 16)", "x = self.linear(x)\nx = torch.relu(x)\nx / 2.0", IG),
    ("64_Gemm_LogSumExp_LeakyReLU_LeakyReLU_GELU_GELU", "self.linear = nn.Linear(20, 16)", "x = self.linear(x)\nx = torch.logsumexp(x, dim=1, keepdim=True)\nx = F.leaky_relu(x, negative_slope=0.01)\nx = F.leaky_relu(x, negative_slope=0.01)\nx = F.gelu(x)\nF.gelu(x)", IG),
    ("65_Conv2d_AvgPool_Sigmoid_Sum", C2 + "\nself.avg_pool = nn.AvgPool2d(2)", "x = self.conv(x)\nx = self.avg_pool(x)\nx = torch.sigmoid(x)\ntorch.sum(x, dim=[1, 2, 3])", I2),
    ("66_Matmul_Dropout_Mean_Softmax", FCM + "\nself.dropout = nn.Dropout(0.2)", "x = self.matmul(x)\nx = self.dropout(x)\nx = torch.mean(x, dim=1, keepdim=True)\ntorch.softmax(x, dim=1)", IG),
    ("67_Conv2d_GELU_GlobalAvgPool", C2, "x = self.conv(x)\nx = F.gelu(x)\nx = F.adaptive_avg_pool2d(x, 1)\nx.squeeze(-1).squeeze(-1)", I2),
    ("68_Matmul_Min_Subtract", "self.linear = nn.Linear(20, 16)\nself.constant = nn.Parameter(torch.tensor(2.0))", "x = self.linear(x)\nx = torch.min(x, self.constant)\nx - self.constant", IG),
    ("69_Conv2d_HardSwish_ReLU", C2, "x = self.conv(x)\nx = F.hardswish(x)\ntorch.relu(x)", I2),
    ("70_Gemm_Sigmoid_Scaling_ResidualAdd", FC, "x = self.gemm(x)\noriginal_x = x\nx = torch.sigmoid(x)\nx = x * 2.0\nx + original_x", IG),
    ("71_Conv2d_Divide_LeakyReLU", C2, "x = self.conv(x)\nx = x / 2.0\nF.leaky_relu(x, negative_slope=0.01)", I2),
    ("72_ConvTranspose3d_BatchNorm_AvgPool_AvgPool", T3 + "\nself.batch_norm = nn.BatchNorm3d(8)\nself.avg_pool1 = nn.AvgPool3d(kernel_size=2)\nself.avg_pool2 = nn.AvgPool3d(kernel_size=2)", "x = self.conv_transpose(x)\nx = self.batch_norm(x)\nx = self.avg_pool1(x)\nself.avg_pool2(x)", T3I),
    ("73_Conv2d_BatchNorm_Scaling", C2 + "\nself.bn = nn.BatchNorm2d(8)", "x = self.conv(x)\nx = self.bn(x)\nx * 2.0", I2),
    ("74_ConvTranspose3d_LeakyReLU_Multiply_LeakyReLU_Max", T3 + "\nself.multiplier = nn.Parameter(torch.randn(8, 1, 1, 1))\nself.leaky_relu = nn.LeakyReLU(negative_slope=0.2)\nself.max_pool = nn.MaxPool3d(kernel_size=2)", "x = self.conv_transpose(x)\nx = self.leaky_relu(x)\nx = x * self.multiplier\nx = self.leaky_relu(x)\nself.max_pool(x)", T3I),
    ("75_Gemm_GroupNorm_Min_BiasAdd", FC + "\nself.group_norm = nn.GroupNorm(4, 16)\nself.bias = nn.Parameter(torch.randn(1, 16, 1, 1))", "x = self.gemm(x)\nx = self.group_norm(x)\nx = torch.min(x, dim=1, keepdim=True)[0]\nx + self.bias", IG),
    ("76_Gemm_Add_ReLU", "self.gemm = nn.Linear(20, 16, bias=False)\nself.bias = nn.Parameter(torch.randn(16))", "x = self.gemm(x)\nx = x + self.bias\ntorch.relu(x)", IG),
    ("77_ConvTranspose3d_Scale_BatchNorm_GlobalAvgPool", T3 + "\nself.batch_norm = nn.BatchNorm3d(8)\nself.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))", "x = self.conv_transpose(x)\nx = x * 2.0\nx = self.batch_norm(x)\nself.global_avg_pool(x)", T3I),
    ("78_ConvTranspose3d_Max_Max_Sum", T3 + "\nself.max_pool1 = nn.MaxPool3d(kernel_size=2)\nself.max_pool2 = nn.MaxPool3d(kernel_size=3)", "x = self.conv_transpose(x)\nx = self.max_pool1(x)\nx = self.max_pool2(x)\ntorch.sum(x, dim=1, keepdim=True)", f"{R}(1, 3, 5, 6, 6)"),
    ("79_Conv3d_Multiply_InstanceNorm_Clamp_Multiply_Max", C3 + "\nself.multiplier = nn.Parameter(torch.randn(8, 1, 1, 1))\nself.instance_norm = nn.InstanceNorm3d(8)", "x = self.conv(x)\nx = x * self.multiplier\nx = self.instance_norm(x)\nx = torch.clamp(x, -1.0, 1.0)\nx = x * self.multiplier\ntorch.max(x, dim=1)[0]", I3),
    ("80_Gemm_Max_Subtract_GELU", FC + "\nself.max_dim = 1", "x = self.gemm(x)\nx = torch.max(x, dim=self.max_dim, keepdim=True).values\nx = x - x.mean(dim=1, keepdim=True)\nF.gelu(x)", IG),
    ("81_Gemm_Swish_Divide_Clamp_Tanh_Clamp", FC, "x = self.gemm(x)\nx = x * torch.sigmoid(x)\nx = x / 2.0\nx = torch.clamp(x, min=-1.0, max=1.0)\nx = torch.tanh(x)\ntorch.clamp(x, min=-1.0, max=1.0)", IG),
    ("82_Conv2d_Tanh_Scaling_BiasAdd_Max", C2 + "\n" + B3 + "\nself.max_pool = nn.MaxPool2d(2)", "x = self.conv(x)\nx = torch.tanh(x)\nx = x * 2.0\nx = x + self.bias\nself.max_pool(x)", I2),
    ("83_Conv3d_GroupNorm_Min_Clamp_Dropout", C3 + "\nself.norm = nn.GroupNorm(4, 8)\nself.dropout = nn.Dropout(0.2)", "x = self.conv(x)\nx = self.norm(x)\nx = torch.min(x, torch.tensor(0.0))\nx = torch.clamp(x, min=0.0, max=1.0)\nself.dropout(x)", I3),
    ("84_Gemm_BatchNorm_Scaling_Softmax", FC + "\nself.bn = nn.BatchNorm1d(16)\nself.scale = nn.Parameter(torch.ones(1))\nself.softmax = nn.Softmax(dim=1)", "x = self.gemm(x)\nx = self.bn(x)\nx = self.scale * x\nself.softmax(x)", IG),
    ("85_Conv2d_GroupNorm_Scale_MaxPool_Clamp", C2 + "\nself.group_norm = nn.GroupNorm(4, 8)\nself.scale = nn.Parameter(torch.ones(8, 1, 1))\nself.maxpool = nn.MaxPool2d(kernel_size=2)", "x = self.conv(x)\nx = self.group_norm(x)\nx = x * self.scale\nx = self.maxpool(x)\ntorch.clamp(x, 0.0, 1.0)", I2),
    ("86_Matmul_Divide_GELU", "self.linear = nn.Linear(20, 16)", "x = self.linear(x)\nx = x / 2.0\nF.gelu(x)", IG),
    ("87_Conv2d_Subtract_Subtract_Mish", C2, "x = self.conv(x)\nx = x - 0.5\nx = x - 0.2\nF.mish(x)", I2),
    ("88_Gemm_GroupNorm_Swish_Multiply_Swish", FC + "\nself.group_norm = nn.GroupNorm(4, 16)\nself.multiply_weight = nn.Parameter(torch.randn(16))", "x = self.gemm(x)\nx = self.group_norm(x)\nx = x * torch.sigmoid(x)\nx = x * self.multiply_weight\nx * torch.sigmoid(x)", IG),
    ("89_ConvTranspose3d_MaxPool_Softmax_Subtract_Swish_Max", T3 + "\nself.max_pool = nn.MaxPool3d(kernel_size=2, stride=2)\nself.subtract = nn.Parameter(torch.randn(8))", "x = self.conv_transpose(x)\nx = self.max_pool(x)\nx = torch.softmax(x, dim=1)\nx = x - self.subtract.view(1, -1, 1, 1, 1)\nx = torch.sigmoid(x) * x\ntorch.max(x, dim=1)[0]", T3I),
    ("90_Conv3d_LeakyReLU_Sum_Clamp_GELU", C3 + "\nself.sum_tensor = nn.Parameter(torch.randn(8, 1, 1, 1))", "x = self.conv(x)\nx = F.leaky_relu(x, negative_slope=0.2)\nx = x + self.sum_tensor\nx = torch.clamp(x, min=-1.0, max=1.0)\nF.gelu(x)", I3),
    ("91_ConvTranspose2d_Softmax_BiasAdd_Scaling_Sigmoid", T2 + "\n" + B3, "x = self.conv_transpose(x)\nx = torch.softmax(x, dim=1)\nx = x + self.bias\nx = x * 2.0\ntorch.sigmoid(x)", T2I),
    ("92_Conv2d_GroupNorm_Tanh_HardSwish_ResidualAdd_LogSumExp", C2 + "\nself.group_norm = nn.GroupNorm(4, 8)\nself.tanh = nn.Tanh()\nself.hard_swish = nn.Hardswish()", "x_conv = self.conv(x)\nx_norm = self.group_norm(x_conv)\nx_tanh = self.tanh(x_norm)\nx_hard_swish = self.hard_swish(x_tanh)\nx_res = x_conv + x_hard_swish\ntorch.logsumexp(x_res, dim=1, keepdim=True)", I2),
    ("93_ConvTranspose2d_Add_Min_GELU_Multiply", T2, "x = self.conv_transpose(x)\nx = x + 0.5\nx = torch.min(x, torch.tensor(0.0))\nx = F.gelu(x)\nx * 2.0", T2I),
    ("94_Gemm_BiasAdd_Hardtanh_Mish_GroupNorm", FC + "\nself.bias = nn.Parameter(torch.randn(16))\nself.hardtanh = nn.Hardtanh()\nself.mish = nn.Mish()\nself.groupnorm = nn.GroupNorm(num_groups=4, num_channels=16)", "x = self.gemm(x)\nx = x + self.bias\nx = self.hardtanh(x)\nx = self.mish(x)\nself.groupnorm(x)", IG),
    ("95_Matmul_Add_Swish_Tanh_GELU_Hardtanh", FCM + "\nself.add_value = nn.Parameter(torch.randn(16))", "x = self.matmul(x)\nx = x + self.add_value\nx = torch.sigmoid(x) * x\nx = torch.tanh(x)\nx = F.gelu(x)\nF.hardtanh(x, min_val=-1, max_val=1)", IG),
    ("96_ConvTranspose3d_Multiply_Max_GlobalAvgPool_Clamp", T3 + "\nself.maxpool = nn.MaxPool3d(kernel_size=2)\nself.global_avg_pool = nn.AdaptiveAvgPool3d((1, 1, 1))", "x = self.conv_transpose(x)\nx = x * 0.5\nx = self.maxpool(x)\nx = self.global_avg_pool(x)\ntorch.clamp(x, min=0, max=1)", T3I),
    ("97_Matmul_BatchNorm_BiasAdd_Divide_Swish", FCM + "\nself.bn = nn.BatchNorm1d(16)\nself.bias = nn.Parameter(torch.randn(1))", "x = self.matmul(x)\nx = self.bn(x)\nx = x + self.bias\nx = x / 1.0\nx * torch.sigmoid(x)", IG),
    ("98_Matmul_AvgPool_GELU_Scale_Max", FCM + "\nself.avg_pool = nn.AvgPool1d(kernel_size=4)", "x = self.matmul(x)\nx = self.avg_pool(x.unsqueeze(1)).squeeze(1)\nx = F.gelu(x)\nx = x * 2.0\ntorch.max(x, dim=1).values", IG),
    ("99_Matmul_GELU_Softmax", "self.linear = nn.Linear(20, 16)", "x = self.linear(x)\nx = F.gelu(x)\nF.softmax(x, dim=1)", IG),
    ("100_ConvTranspose3d_Clamp_Min_Divide", T3, "x = self.conv_transpose(x)\nx = torch.clamp(x, min=-1.0)\nx / 2.0", T3I),
]


def write(folder: Path, problems) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for spec in problems:
        name, init, forward, inputs = spec[:4]
        args = spec[4] if len(spec) > 4 else "x"
        doc = name.split("_", 1)[1].replace("_", " ").strip() + " (tiny shapes; KernelBench's pattern)"
        (folder / f"{name}.py").write_text(problem(doc, init, forward, inputs, args))


if __name__ == "__main__":
    write(HERE / "level1", LEVEL1)
    write(HERE / "level2", LEVEL2)
    print(f"wrote {len(LEVEL1)} level-1 and {len(LEVEL2)} level-2 problems under {HERE}")
