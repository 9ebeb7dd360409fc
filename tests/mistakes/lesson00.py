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

# q2: (seq, batch, d) to one row per token, sentence by sentence
R = "def to_rows(x):\n"
MISTAKES += [
    q("q2", "fixed sizes", R + "    return x.transpose(0, 1).reshape(8, 4)\n", "raised RuntimeError"),
    q("q2", "transpose_ in place", R + "    return x.transpose_(0, 1).reshape(-1, x.size(-1))\n", "changed its input"),
    q("q2", "flattened to one axis", R + "    return x.transpose(0, 1).flatten()\n", "should have shape"),
    q("q2", "a list of rows", R + "    return list(x.transpose(0, 1).reshape(-1, x.size(-1)))\n", "torch.Tensor"),
]
ALTERNATIVES += [
    right("q2", "transpose and reshape", R + "    return x.transpose(0, 1).reshape(-1, x.size(-1))\n"),
    right("q2", "permute and flatten", R + "    return x.permute(1, 0, 2).flatten(0, 1)\n"),
    right("q2", "movedim, sizes named", R + "    seq, batch, d = x.shape\n"
          "    return torch.movedim(x, 1, 0).contiguous().view(batch * seq, d)\n"),
    right("q2", "concatenating sentences", R + "    return torch.cat([x[:, b] for b in range(x.size(1))])\n"),
    right("q2", "a lambda with swapaxes", "to_rows = lambda x: x.swapaxes(0, 1).reshape(-1, x.shape[2])\n"),
]

# q3: an nn.Module whose state_dict matches a saved TinyMLP's
INIT = ("class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
        "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n")
MISTAKES += [
    q("q3", "layers in a plain list", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
      "        super().__init__()\n        self.layers = [nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_out)]\n\n"
      "    def forward(self, x):\n        return self.layers[1](torch.relu(self.layers[0](x)))\n", "not registered"),
    q("q3", "layers in a plain dict", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
      "        super().__init__()\n        self.layers = {'linear1': nn.Linear(d_in, d_hidden),\n"
      "                       'linear2': nn.Linear(d_hidden, d_out)}\n\n    def forward(self, x):\n"
      "        return self.layers['linear2'](torch.relu(self.layers['linear1'](x)))\n", "plain Python dict"),
    q("q3", "super().__init__() forgotten",
      "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
      "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
      "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n",
      "Call super().__init__() first"),
    q("q3", "not an nn.Module", "class TinyMLP:\n    def __init__(self, d_in, d_hidden, d_out):\n"
      "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
      "    def __call__(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "subclasses nn.Module"),
    q("q3", "a function, not a class", "def TinyMLP(d_in, d_hidden, d_out):\n"
      "    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))\n",
      "should be a class"),
    q("q3", "other attribute names", INIT.replace("linear", "fc") + "    def forward(self, x):\n"
      "        return self.fc2(torch.relu(self.fc1(x)))\n", "the attribute names of the layers"),
    q("q3", "an nn.Sequential", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
      "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),\n"
      "                                 nn.Linear(d_hidden, d_out))\n\n    def forward(self, x):\n"
      "        return self.net(x)\n", "the attribute names of the layers"),
    q("q3", "no bias",
      INIT.replace("d_hidden)\n", "d_hidden, bias=False)\n").replace("d_out)\n", "d_out, bias=False)\n")
      + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "bias included"),
    q("q3", "an extra parameter",
      INIT.replace("        self.linear2", "        self.scale = nn.Parameter(torch.ones(1))\n"
      "        self.linear2") + "    def forward(self, x):\n"
      "        return self.linear2(torch.relu(self.linear1(x))) * self.scale\n", "nothing else that holds weights"),
    q("q3", "sizes in the order (d_in, d_out, d_hidden)",
      INIT.replace("d_in, d_hidden, d_out):", "d_in, d_out, d_hidden):")
      + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "in the order"),
    q("q3", "weight shapes the other way round", INIT.replace("nn.Linear(d_in, d_hidden)", "nn.Linear(d_hidden, d_in)")
      .replace("nn.Linear(d_hidden, d_out)", "nn.Linear(d_out, d_hidden)")
      + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "stored as (out, in)"),
    q("q3", "float64 layers", INIT.replace("d_hidden)\n        self.linear2", "d_hidden, dtype=torch.float64)\n"
      "        self.linear2").replace("d_out)\n\n", "d_out, dtype=torch.float64)\n\n")
      + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x.double()))).float()\n",
      "expected torch.float32"),
    q("q3", "weights kept as buffers",
      INIT.replace("d_out)\n\n", "d_out)\n        w = self.linear2.weight.detach().clone()\n"
      "        del self.linear2.weight\n        self.linear2.register_buffer('weight', w)\n\n")
      + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "not a parameter"),
    q("q3", "forward misspelled", INIT + "    def foward(self, x):\n"
      "        return self.linear2(torch.relu(self.linear1(x)))\n", "no method named `forward`"),
    q("q3", "new layers built in forward", INIT + "    def forward(self, x):\n"
      "        hidden = nn.Linear(x.size(-1), self.linear1.out_features)(x)\n"
      "        return self.linear2(torch.relu(hidden))\n", "differs"),
    q("q3", "graph cut with .detach()", INIT + "    def forward(self, x):\n"
      "        return self.linear2(torch.relu(self.linear1(x)).detach())\n", "no gradient reaches"),
    q("q3", "forward under no_grad", INIT + "    def forward(self, x):\n        with torch.no_grad():\n"
      "            return self.linear2(torch.relu(self.linear1(x)))\n", "carries no gradient"),
]
ALTERNATIVES += [
    right("q3", "F.relu and a docstring",
          INIT.replace("        super()", "        \"\"\"A tiny MLP.\"\"\"\n        super()")
          + "    def forward(self, x):\n        h = F.relu(self.linear1(x))\n        return self.linear2(h)\n"),
    right("q3", "an nn.ReLU module and keyword sizes", "class TinyMLP(nn.Module):\n"
          "    def __init__(self, d_in, d_hidden, d_out, activation=nn.ReLU):\n        super().__init__()\n"
          "        self.linear1 = nn.Linear(in_features=d_in, out_features=d_hidden)\n"
          "        self.act = activation()\n        self.linear2 = nn.Linear(d_hidden, d_out, bias=True)\n\n"
          "    def forward(self, x):\n        return self.linear2(self.act(self.linear1(x)))\n"),
    right("q3", "setattr in a loop", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
          "        super().__init__()\n"
          "        for name, (i, o) in {'linear1': (d_in, d_hidden), 'linear2': (d_hidden, d_out)}.items():\n"
          "            setattr(self, name, nn.Linear(i, o))\n\n    def forward(self, x):\n"
          "        return self.linear2(self.linear1(x).clamp(min=0))\n"),
    right("q3", "a plain list of names beside the layers", INIT.replace(
          "d_out)\n\n", "d_out)\n        self.order = ['linear1', 'linear2']\n\n")
          + "    def forward(self, x):\n        x = self.linear1(x)\n        x = torch.relu(x)\n"
          "        return self.linear2(x)\n"),
    right("q3", "ReLU in place on the hidden layer", INIT + "    def forward(self, x):\n"
          "        hidden = self.linear1(x)\n        hidden.relu_()\n        return self.linear2(hidden)\n"),
    right("q3", "F.linear on the registered weights", INIT + "    def forward(self, x):\n"
          "        h = F.linear(x, self.linear1.weight, self.linear1.bias).relu()\n"
          "        return F.linear(h, self.linear2.weight, self.linear2.bias)\n"),
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
