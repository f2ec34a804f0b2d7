"""Random problems in the forms KernelBench's real files use, from a fixed seed: models
built with `nn.Sequential`, `nn.ModuleList` and `nn.ModuleDict` (numeric and keyword child
names), functional losses with reductions and keyword arguments, registered buffers, full
reductions such as `torch.mean((a - b) ** 2)`, `x.view(x.size(0), -1)` before a Linear, and
level-3-like small models: MLPs, a LeNet-ish CNN, a transformer block, RNN and GRU cells.

    python -m benchmarks.kernelbench_like.fuzz [--seed 0] [--count 22] [--out DIR]

writes the problems as files (default: benchmarks/kernelbench_like/level3/) so that
`python -m search_engine coverage` and `python -m benchmarks.offline_variants --dir` see them;
tests/search_engine/synthesis/test_offline_fuzz_forms.py checks a sample of them in CI.
Shapes are tiny (the Triton interpreter runs them on the CPU).
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
HEADER = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
ACTIVATIONS = ["nn.ReLU()", "nn.GELU()", "nn.Tanh()", "nn.Sigmoid()", "nn.SiLU()",
               "nn.LeakyReLU(negative_slope=0.1)"]
FUNCTIONAL = ["F.relu", "torch.tanh", "torch.sigmoid", "F.gelu", "F.silu"]


def source(init: list[str], forward: list[str], inputs: str, args: str = "x",
           init_params: str = "", init_inputs: str = "[]", sizes: str = "",
           header: str = HEADER) -> str:
    """A KernelBench-format file: `init` and `forward` are the bodies' lines."""
    body = "".join(f"        {line}\n" for line in init) or "        pass\n"
    fwd = "".join(f"        {line}\n" for line in forward)
    return (header + "class Model(nn.Module):\n"
            f"    def __init__(self{init_params}):\n        super(Model, self).__init__()\n"
            f"{body}\n    def forward(self, {args}):\n{fwd}\n\n{sizes}"
            f"def get_inputs():\n    return [{inputs}]\n\n\n"
            f"def get_init_inputs():\n    return {init_inputs}\n")


def _widths(rng: random.Random, count: int) -> list[int]:
    return [rng.choice([8, 12, 16, 24, 32]) for _ in range(count)]


def sequential_mlp(rng: random.Random) -> str:
    """KernelBench level 3's MLP: layers appended to a list, then nn.Sequential(*layers)."""
    depth = rng.randint(1, 3)
    act = rng.choice(ACTIVATIONS)
    bias = rng.choice(["", ", bias=False"])
    init = ["layers = []", "current = input_size", "for size in layer_sizes:",
            f"    layers.append(nn.Linear(current, size{bias}))",
            f"    layers.append({act})", "    current = size",
            "layers.append(nn.Linear(current, output_size))",
            "self.network = nn.Sequential(*layers)"]
    sizes = (f"batch_size = {rng.choice([2, 4, 8])}\ninput_size = {rng.choice([16, 32])}\n"
             f"layer_sizes = {_widths(rng, depth)}\noutput_size = {rng.choice([4, 10])}\n\n\n")
    return source(init, ["return self.network(x)"], "torch.randn(batch_size, input_size)",
                  init_params=", input_size, layer_sizes, output_size",
                  init_inputs="[input_size, layer_sizes, output_size]", sizes=sizes)


def module_list_mlp(rng: random.Random) -> str:
    widths = [16] + _widths(rng, rng.randint(1, 3))
    act = rng.choice(FUNCTIONAL)
    init = ["self.layers = nn.ModuleList(["
            + ", ".join(f"nn.Linear({a}, {b})" for a, b in zip(widths, widths[1:])) + "])"]
    if rng.random() < 0.5:
        forward = ["for layer in self.layers:", f"    x = {act}(layer(x))", "return x"]
    else:
        forward = [f"x = {act}(self.layers[0](x))"] + \
            [f"x = self.layers[{i}](x)" for i in range(1, len(widths) - 1)] + ["return x"]
    return source(init, forward, "torch.randn(4, 16)")


def module_dict_block(rng: random.Random) -> str:
    keys = rng.sample(["proj", "out", "gate", "class", "lambda", "0"], 2)
    init = [f"self.blocks = nn.ModuleDict({{{keys[0]!r}: nn.Linear(16, 24), "
            f"{keys[1]!r}: nn.Linear(24, 8)}})"]
    act = rng.choice(FUNCTIONAL)
    forward = [f"h = {act}(self.blocks[{keys[0]!r}](x))",
               f"return self.blocks[{keys[1]!r}](h)"]
    return source(init, forward, "torch.randn(4, 16)")


LOSSES = [
    ("F.mse_loss", {}), ("F.l1_loss", {}), ("F.smooth_l1_loss", {"beta": [0.5, 1.0]}),
    ("F.huber_loss", {"delta": [0.5, 2.0]}), ("torch.nn.functional.mse_loss", {}),
]


def functional_loss(rng: random.Random) -> str:
    name, options = rng.choice(LOSSES)
    reduction = rng.choice(["mean", "sum", "none", None])
    kwargs = [f"{k}={rng.choice(v)}" for k, v in options.items() if rng.random() < 0.7]
    if reduction is not None:
        kwargs.append(f"reduction={reduction!r}")
    call = ", ".join(["predictions", "targets"] + kwargs)
    shape = rng.choice(["(8, 64)", "(4, 8, 16)", "(16,)"])
    return source([], [f"return {name}({call})"],
                  f"torch.randn{shape}, torch.randn{shape}", args="predictions, targets")


DISTRIBUTIONS = ["Pareto(0.01, 1.5)", "Pareto(1.0, 3.0)", "Exponential(2.0)",
                 "Normal(0.0, 3.0)", "Uniform(-2.0, 2.0)", "LogNormal(0.0, 1.0)"]


def distribution_inputs(rng: random.Random) -> str:
    """KernelBench's loss files draw their inputs from torch.distributions (`Pareto(0.01,
    1.5).sample(...)`, times a random scalar): argument checks there read values, which the
    analysis's meta tensors have none of."""
    body = rng.choice([
        "torch.mean((predictions - targets) ** 2)",
        "torch.nn.functional.smooth_l1_loss(predictions, targets)",
        "torch.mean(torch.clamp(1 - predictions * targets, min=0))",
        "torch.nn.functional.l1_loss(predictions, targets, reduction='sum')"])
    first, second = rng.choice(DISTRIBUTIONS), rng.choice(DISTRIBUTIONS)
    names = sorted({d.split("(")[0] for d in (first, second)})
    header = HEADER.rstrip("\n") + f"\nfrom torch.distributions import {', '.join(names)}\n\n\n"
    scale = rng.choice(["", " * torch.rand(())"])
    sizes = f"batch_size = {rng.choice([8, 16])}\ninput_shape = ({rng.choice([16, 24])},)\n\n\n"
    inputs = (f"{first}.sample((batch_size, *input_shape)){scale}, "
              f"{second}.sample((batch_size, *input_shape))")
    return source([], [f"return {body}"], inputs, args="predictions, targets", sizes=sizes,
                  header=header)


def full_reduction(rng: random.Random) -> str:
    """MSELoss and friends as KernelBench writes them: a reduction over every element."""
    body = rng.choice([
        "torch.mean((predictions - targets) ** 2)", "((predictions - targets) ** 2).mean()",
        "torch.sum(torch.abs(predictions - targets))", "(predictions - targets).pow(2).sum()",
        "torch.mean(torch.clamp(1 - predictions * targets, min=0))",
        "torch.mean(predictions ** 2) + torch.mean(targets ** 2)",
    ])
    shape = rng.choice(["batch_size, *input_shape", "batch_size, 64"])
    sizes = f"batch_size = {rng.choice([4, 16])}\ninput_shape = ({rng.choice([32, 48])},)\n\n\n"
    return source([], [f"return {body}"],
                  f"torch.randn({shape}), torch.randn({shape})", args="predictions, targets",
                  sizes=sizes)


def buffers(rng: random.Random) -> str:
    shape = rng.choice(["(16,)", "(1, 16)"])
    init = [f"self.register_buffer('scale', torch.rand{shape} + 0.5)",
            "self.register_buffer('shift', torch.zeros(16))",
            "self.proj = nn.Linear(16, 16)"]
    op = rng.choice(["x * self.scale + self.shift", "self.proj(x) * self.scale",
                     "torch.relu(self.proj(x * self.scale)) - self.shift"])
    return source(init, [f"return {op}"], "torch.randn(4, 16)")


def flatten_linear(rng: random.Random) -> str:
    flat = rng.choice(["x.view(x.size(0), -1)", "x.view(-1, 4 * 5 * 5)",
                       "torch.flatten(x, 1)", "x.reshape(x.shape[0], -1)"])
    init = ["self.fc = nn.Linear(4 * 5 * 5, 10)"]
    return source(init, [f"x = {flat}", "return self.fc(x)"], "torch.randn(2, 4, 5, 5)")


def lenet(rng: random.Random) -> str:
    """KernelBench level 3's LeNet-5 at a tiny size."""
    pool = rng.choice(["F.max_pool2d(x, kernel_size=2, stride=2)", "F.avg_pool2d(x, 2)"])
    init = ["self.conv1 = nn.Conv2d(in_channels=1, out_channels=4, kernel_size=3, stride=1)",
            "self.conv2 = nn.Conv2d(in_channels=4, out_channels=8, kernel_size=3, stride=1)",
            "self.fc1 = nn.Linear(in_features=8 * 2 * 2, out_features=16)",
            "self.fc2 = nn.Linear(in_features=16, out_features=num_classes)"]
    forward = ["x = F.relu(self.conv1(x))", f"x = {pool}", "x = F.relu(self.conv2(x))",
               f"x = {pool}", "x = x.view(-1, 8 * 2 * 2)", "x = F.relu(self.fc1(x))",
               "x = self.fc2(x)", "return x"]
    return source(init, forward, "torch.randn(batch_size, 1, 14, 14)",
                  init_params=", num_classes", init_inputs="[num_classes]",
                  sizes=f"batch_size = 2\nnum_classes = {rng.choice([4, 10])}\n\n\n")


def conv_sequential(rng: random.Random) -> str:
    """A VGG-ish block: convolutions, norms and pools in an nn.Sequential."""
    norm = rng.choice(["nn.BatchNorm2d(8), ", ""])
    init = ["self.features = nn.Sequential(",
            f"    nn.Conv2d(3, 8, kernel_size=3, padding=1), {norm}nn.ReLU(inplace=True),",
            "    nn.MaxPool2d(kernel_size=2, stride=2))"]
    return source(init, ["return self.features(x)"], "torch.randn(2, 3, 8, 8)")


def transformer_block(rng: random.Random) -> str:
    """A pre-norm attention block written out (q, k, v projections, softmax, MLP)."""
    heads = rng.choice([1, 2])
    init = ["self.ln1 = nn.LayerNorm(16)", "self.qkv = nn.Linear(16, 48)",
            "self.proj = nn.Linear(16, 16)", "self.ln2 = nn.LayerNorm(16)",
            "self.mlp = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))"]
    forward = ["B, T, C = x.size()", "q, k, v = self.qkv(self.ln1(x)).split(16, dim=2)",
               f"q = q.view(B, T, {heads}, C // {heads}).transpose(1, 2)",
               f"k = k.view(B, T, {heads}, C // {heads}).transpose(1, 2)",
               f"v = v.view(B, T, {heads}, C // {heads}).transpose(1, 2)",
               "att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))",
               "att = F.softmax(att, dim=-1)",
               "y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)",
               "x = x + self.proj(y)", "return x + self.mlp(self.ln2(x))"]
    return source(init, forward, "torch.randn(2, 8, 16)")


def rnn_cell(rng: random.Random) -> str:
    """KernelBench level 3's vanilla RNN step (cat, Linear, tanh) with the hidden state a
    buffer or a plain tensor attribute it reassigns, or a library cell (nn.RNNCell,
    nn.GRUCell, nn.LSTMCell) with the state an input or left out (zeros)."""
    kind = rng.choice(["buffer", "attribute", "nn.RNNCell", "nn.GRUCell", "nn.LSTMCell"])
    if kind in ("buffer", "attribute"):
        state = "self.register_buffer('hidden', torch.randn(4, 12))" if kind == "buffer" \
            else "self.hidden = torch.randn((4, 12))"
        init = [state, "self.i2h = nn.Linear(8 + 12, 12)", "self.h2o = nn.Linear(12, 6)",
                "self.tanh = nn.Tanh()"]
        forward = ["self.hidden = self.hidden.to(x.device)" if kind == "attribute" else "",
                   "combined = torch.cat((x, self.hidden), dim=1)",
                   "hidden = self.tanh(self.i2h(combined))", "return self.h2o(hidden)"]
        return source(init, [line for line in forward if line], "torch.randn(4, 8)")
    if kind == "nn.LSTMCell":
        state = rng.choice(["(h, c)", None])
        call = f"self.cell(x, {state})" if state else "self.cell(x)"
        return source([f"self.cell = {kind}(8, 12)"], [f"h1, c1 = {call}", "return h1 * c1"],
                      "torch.randn(4, 8), torch.randn(4, 12), torch.randn(4, 12)",
                      args="x, h, c")
    call = rng.choice(["self.cell(x, h)", "self.cell(x, hx=h)", "self.cell(x)"])
    return source([f"self.cell = {kind}(8, 12)"], [f"return {call}"],
                  "torch.randn(4, 8), torch.randn(4, 12)", args="x, h")


FORMS = {f.__name__: f for f in (
    sequential_mlp, module_list_mlp, module_dict_block, functional_loss, full_reduction,
    buffers, flatten_linear, lenet, conv_sequential, transformer_block, rnn_cell,
    distribution_inputs)}


def generate(seed: int = 0, count: int = 22) -> dict[str, str]:
    """`count` problems named `<index>_<form>`, every form in turn, drawn from `seed`."""
    rng = random.Random(seed)
    names = list(FORMS)
    out = {}
    for i in range(count):
        form = names[i % len(names)]
        out[f"{i:03d}_{form}"] = FORMS[form](rng)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kernelbench_like.fuzz")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=22)
    parser.add_argument("--out", default=str(HERE / "level3"))
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    written = set()
    for name, text in generate(args.seed, args.count).items():
        if text not in written:  # a form drawn twice alike is written once
            written.add(text)
            (out / f"{name}.py").write_text(text)
    print(f"wrote {len(written)} problems to {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
