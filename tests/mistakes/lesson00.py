"""Lesson 00: right answers written differently (accepted), and wrong answers that only the generic contract catches
(refused with the phrase given). The typical mistakes themselves are declared once, beside each exercise, in
course_utils/exercises/lesson00.py."""
from . import Alternative, Mistake

PRELUDE = "import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson00", exercise, name, code, message, PRELUDE)


def right(exercise: str, name: str, code: str) -> Alternative:
    return Alternative("lesson00", exercise, name, code, PRELUDE)


# q1: every row of a against every row of b, by broadcasting
D = "def pairwise_sq_distances(a, b):\n"
MISTAKES = [
    q("q1", "torch.cdist squared", D + "    return torch.cdist(a, b) ** 2\n", "calls torch.cdist"),
    q("q1", "torch.cdist under another name", "from torch import cdist as all_distances\n\n\n" + D
      + "    return all_distances(a, b).pow(2)\n", "calls torch.cdist"),
    q("q1", "two loops", D + "    out = torch.zeros(a.size(0), b.size(0), dtype=a.dtype)\n"
      "    for i in range(a.size(0)):\n        for j in range(b.size(0)):\n"
      "            out[i, j] = ((a[i] - b[j]) ** 2).sum()\n    return out\n", "a Python loop"),
    q("q1", "a loop over a's rows", D + "    return torch.stack([((row - b) ** 2).sum(-1) for row in a])\n",
      "a Python loop"),
    q("q1", "a loop over the features",
      D + "    return sum((a[:, None, k] - b[None, :, k]) ** 2 for k in range(a.size(1)))\n", "a Python loop"),
    q("q1", "expansion scaling a in place", D + "    a2 = (a * a).sum(1, keepdim=True)\n    b2 = (b * b).sum(1)\n"
      "    return a.mul_(-2) @ b.T + a2 + b2\n", "changed its input"),
    q("q1", "float64 result", D + "    return ((a[:, None].double() - b[None].double()) ** 2).sum(-1)\n",
      "torch.float32"),
    q("q1", "off by a constant", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1) + 1e-3\n", "differs"),
    q("q1", "a NumPy array", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1).numpy()\n", "torch.Tensor"),
]
ALTERNATIVES = [
    right("q1", "unsqueeze and vector_norm", D + "    diff = a.unsqueeze(1) - b.unsqueeze(0)\n"
          "    return torch.linalg.vector_norm(diff, dim=-1) ** 2\n"),
    right("q1", "the expansion ‖a‖² + ‖b‖² − 2a·b",
          D + "    return (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T\n"),
    right("q1", "einsum on the differences", D + "    diff = a[:, None] - b[None]\n"
          "    return torch.einsum('nmd,nmd->nm', diff, diff)\n"),
    right("q1", "expand, then multiply", D + "    n, m, d = a.size(0), b.size(0), a.size(1)\n"
          "    diff = a.view(n, 1, d).expand(n, m, d) - b.view(1, m, d).expand(n, m, d)\n"
          "    return (diff * diff).sum(dim=2)\n"),
    right("q1", "expansion clamped at zero", D + "    cross = a @ b.transpose(0, 1)\n"
          "    return (a.pow(2).sum(-1, keepdim=True) - 2 * cross + b.pow(2).sum(-1)).clamp_min(0)\n"),
]

# q2: rows listed sentence by sentence back to (seq, batch, d)
R = "def from_rows(rows, seq):\n"
MISTAKES += [
    q("q2", "float64 result", R + "    return rows.double().view(-1, seq, rows.size(1)).transpose(0, 1)\n",
      "torch.float32"),
    q("q2", "resized in place", R + "    rows.resize_(rows.size(0) // seq, seq, rows.size(1))\n"
      "    return rows.transpose(0, 1)\n", "changed its input"),
    q("q2", "flattened to one axis", R + "    return rows.view(-1, seq, rows.size(1)).transpose(0, 1).flatten()\n",
      "should have shape"),
    q("q2", "a list of sentences", R + "    return list(rows.view(-1, seq, rows.size(1)).transpose(0, 1))\n",
      "torch.Tensor"),
]
ALTERNATIVES += [
    right("q2", "reshape and permute", R + "    return rows.reshape(-1, seq, rows.shape[-1]).permute(1, 0, 2)\n"),
    right("q2", "unflatten and swapaxes", R + "    return rows.unflatten(0, (-1, seq)).swapaxes(0, 1)\n"),
    right("q2", "sizes named, contiguous copy", R + "    n, d = rows.shape\n    batch = n // seq\n"
          "    return rows.view(batch, seq, d).transpose(0, 1).contiguous()\n"),
    right("q2", "stacking token positions", R + "    return torch.stack([rows[s::seq] for s in range(seq)])\n"),
]

# q3: a variable-depth MLP whose layers sit in an nn.ModuleList
HEAD = "class TinyMLP(nn.Module):\n    def __init__(self, d_in, hidden_sizes, d_out):\n"
SIZES = "        sizes = [d_in, *hidden_sizes, d_out]\n"
INIT = (HEAD + "        super().__init__()\n" + SIZES
        + "        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))\n\n")
FWD = ("    def forward(self, x):\n        for layer in self.layers[:-1]:\n            x = torch.relu(layer(x))\n"
       "        return self.layers[-1](x)\n")
PAIRS = "zip(sizes, sizes[1:])"
MISTAKES += [
    q("q3", "layers in a plain list", INIT.replace("nn.ModuleList(", "list(") + FWD, "not registered"),
    q("q3", "layers in a plain dict", HEAD + "        super().__init__()\n" + SIZES
      + "        self.layers = {str(i): nn.Linear(a, b) for i, (a, b) in enumerate(" + PAIRS + ")}\n\n"
      "    def forward(self, x):\n        layers = list(self.layers.values())\n        for layer in layers[:-1]:\n"
      "            x = torch.relu(layer(x))\n        return layers[-1](x)\n", "plain Python dict"),
    q("q3", "super().__init__() forgotten", INIT.replace("        super().__init__()\n", "") + FWD,
      "Call super().__init__() first"),
    q("q3", "not an nn.Module", INIT.replace("(nn.Module)", "").replace("        super().__init__()\n", "")
      + FWD.replace("def forward", "def __call__"), "subclasses nn.Module"),
    q("q3", "a function, not a class", "def TinyMLP(d_in, hidden_sizes, d_out):\n" + SIZES.replace("        ", "    ")
      + "    layers = []\n    for a, b in " + PAIRS + ":\n        layers += [nn.Linear(a, b), nn.ReLU()]\n"
      "    return nn.Sequential(*layers[:-1])\n", "should be a class"),
    q("q3", "another attribute name", INIT.replace("self.layers", "self.blocks")
      + FWD.replace("self.layers", "self.blocks"), "the attribute names of the layers"),
    q("q3", "nn.ReLU modules inside the ModuleList", HEAD + "        super().__init__()\n" + SIZES
      + "        self.layers = nn.ModuleList()\n        for a, b in " + PAIRS + ":\n"
      "            self.layers.extend([nn.Linear(a, b), nn.ReLU()])\n        del self.layers[-1]\n\n"
      "    def forward(self, x):\n        for layer in self.layers:\n            x = layer(x)\n        return x\n",
      "places in the ModuleList"),
    q("q3", "one hidden layer whatever the sizes", HEAD + "        super().__init__()\n"
      "        self.layers = nn.ModuleList([nn.Linear(d_in, hidden_sizes[0]), nn.Linear(hidden_sizes[0], d_out)])\n\n"
      + FWD, "one nn.Linear per pair of neighbouring sizes"),
    q("q3", "no bias", INIT.replace("nn.Linear(a, b)", "nn.Linear(a, b, bias=False)") + FWD, "bias included"),
    q("q3", "an extra parameter", INIT.replace("\n\n", "\n        self.scale = nn.Parameter(torch.ones(1))\n\n", 1)
      + FWD.replace("self.layers[-1](x)\n", "self.layers[-1](x) * self.scale\n"), "nothing else that holds weights"),
    q("q3", "weight shapes the other way round", INIT.replace("nn.Linear(a, b)", "nn.Linear(b, a)")
      + FWD.replace("layer(x)", "F.linear(x, layer.weight.T, None)").replace("self.layers[-1](x)",
                                                                            "x @ self.layers[-1].weight"),
      "stored as (out, in)"),
    q("q3", "float64 layers", INIT.replace("nn.Linear(a, b)", "nn.Linear(a, b, dtype=torch.float64)")
      + FWD.replace("        for", "        x = x.double()\n        for").replace("(x)\n", "(x).float()\n"),
      "expected torch.float32"),
    q("q3", "weights kept as buffers", INIT.replace("\n\n", "\n        last = self.layers[-1]\n"
      "        w = last.weight.detach().clone()\n        del last.weight\n"
      "        last.register_buffer('weight', w)\n\n",
      1) + FWD, "not a parameter"),
    q("q3", "forward misspelled", INIT + FWD.replace("def forward", "def foward"), "no method named `forward`"),
    q("q3", "new layers built in forward", INIT + "    def forward(self, x):\n"
      "        x = torch.relu(nn.Linear(x.size(-1), self.layers[0].out_features)(x))\n"
      "        for layer in self.layers[1:-1]:\n            x = torch.relu(layer(x))\n"
      "        return self.layers[-1](x)\n",
      "differs"),
    q("q3", "graph cut with .detach()", INIT + FWD.replace("torch.relu(layer(x))", "torch.relu(layer(x)).detach()"),
      "no gradient reaches"),
    q("q3", "forward under no_grad", INIT + "    def forward(self, x):\n        with torch.no_grad():\n"
      "            for layer in self.layers[:-1]:\n                x = torch.relu(layer(x))\n"
      "            return self.layers[-1](x)\n", "carries no gradient"),
]
ALTERNATIVES += [
    right("q3", "append in a loop, F.relu and a docstring", HEAD + "        \"\"\"A tiny MLP.\"\"\"\n"
          "        super().__init__()\n        self.layers = nn.ModuleList()\n        previous = d_in\n"
          "        for size in list(hidden_sizes) + [d_out]:\n"
          "            self.layers.append(nn.Linear(previous, size))\n"
          "            previous = size\n\n    def forward(self, x):\n        for i, layer in enumerate(self.layers):\n"
          "            x = layer(x)\n            if i < len(self.layers) - 1:\n                x = F.relu(x)\n"
          "        return x\n"),
    right("q3", "an nn.ReLU module beside the list", INIT.replace("\n\n", "\n        self.act = nn.ReLU()\n\n", 1)
          + FWD.replace("torch.relu(layer(x))", "self.act(layer(x))")),
    right("q3", "clamp and keyword sizes", INIT.replace("nn.Linear(a, b)", "nn.Linear(in_features=a, out_features=b)")
          + FWD.replace("torch.relu(layer(x))", "layer(x).clamp(min=0)")),
    right("q3", "ReLU in place on each hidden layer", INIT + "    def forward(self, x):\n"
          "        *hidden, last = self.layers\n        for layer in hidden:\n            x = layer(x)\n"
          "            x.relu_()\n        return last(x)\n"),
    right("q3", "F.linear on the registered weights", INIT + "    def forward(self, x):\n"
          "        for layer in self.layers[:-1]:\n            x = F.linear(x, layer.weight, layer.bias).relu()\n"
          "        return F.linear(x, self.layers[-1].weight, self.layers[-1].bias)\n"),
]

# q4: the squared error whose broadcast stalled the fit
E = "def fixed_squared_error(predictions, targets):\n"
MISTAKES += [
    q("q4", "detached", E + "    return ((predictions.detach()[:, 0] - targets) ** 2).mean()\n",
      "backward cannot run through it"),
    q("q4", "a Python float", E + "    return ((predictions[:, 0] - targets) ** 2).mean().item()\n", "torch.Tensor"),
    q("q4", "squeezed in place", E + "    predictions.squeeze_(1)\n    return ((predictions - targets) ** 2).mean()\n",
      "changed its input"),
    q("q4", "half the squared error", E + "    return 0.5 * ((predictions[:, 0] - targets) ** 2).mean()\n", "differs"),
]
ALTERNATIVES += [
    right("q4", "targets given an axis", E + "    return ((predictions - targets[:, None]) ** 2).mean()\n"),
    right("q4", "predictions transposed to a row", E + "    return ((predictions.T - targets) ** 2).mean()\n"),
    right("q4", "F.mse_loss on a view", E + "    return F.mse_loss(predictions.view(-1), targets)\n"),
    right("q4", "squeeze(-1) and pow", E + "    return (predictions.squeeze(-1) - targets).pow(2).mean()\n"),
    right("q4", "squeeze() and a sum over the count", E + "    diff = predictions.squeeze() - targets\n"
          "    return (diff * diff).sum() / len(targets)\n"),
]
