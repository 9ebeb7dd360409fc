"""Typical wrong answers to the exercises of lesson 00, each with the phrase its feedback must contain."""
from . import Alternative, Mistake

PRELUDE = "import torch\nfrom course_utils import seed_everything\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson00", exercise, name, code, message, PRELUDE)


MISTAKES: list[Mistake] = []
ALTERNATIVES: list[Alternative] = []

# q1: every row of a against every row of b, by broadcasting
D = "def pairwise_sq_distances(a, b):\n"
MISTAKES += [
    q("q1", "no new axes: row i against row i", D + "    return ((a - b) ** 2).sum(-1)\n", "an axis of size 1"),
    q("q1", "(m, n): the axes the other way round", D + "    return ((a[None, :, :] - b[:, None, :]) ** 2).sum(-1)\n",
      "a's rows run down the result"),
    q("q1", "distances, not squared", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1).sqrt()\n",
      "leave out the square root"),
    q("q1", "differences not squared", D + "    return (a[:, None] - b[None]).sum(-1)\n", "square each difference"),
    q("q1", "absolute differences", D + "    return (a[:, None] - b[None]).abs().sum(-1)\n",
      "square each difference"),
    q("q1", "mean over the features", D + "    return ((a[:, None] - b[None]) ** 2).mean(-1)\n", "sum them"),
    q("q1", "not summed", D + "    return (a[:, None] - b[None]) ** 2\n", "still need to be summed"),
    q("q1", "summed over b's rows", D + "    return ((a[:, None] - b[None]) ** 2).sum(1)\n",
      "the sum ran over a row axis"),
    q("q1", "dot products", D + "    return a @ b.T\n", "dot products"),
    q("q1", "expansion without the 2", D + "    return (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None] - a @ b.T\n",
      "the factor 2"),
    q("q1", "expansion with the sign flipped",
      D + "    return (a ** 2).sum(1, keepdim=True) + (b ** 2).sum(1) + 2 * a @ b.T\n", "the sign of the cross term"),
    q("q1", "torch.cdist squared", D + "    return torch.cdist(a, b) ** 2\n", "calls torch.cdist"),
    q("q1", "torch.cdist imported under another name", "from torch import cdist as all_distances\n\n\n" + D
      + "    return all_distances(a, b).pow(2)\n", "calls torch.cdist"),
    q("q1", "two loops", D + "    out = torch.zeros(a.size(0), b.size(0), dtype=a.dtype)\n"
      "    for i in range(a.size(0)):\n        for j in range(b.size(0)):\n"
      "            out[i, j] = ((a[i] - b[j]) ** 2).sum()\n    return out\n", "a Python loop"),
    q("q1", "a loop over a's rows", D + "    return torch.stack([((row - b) ** 2).sum(-1) for row in a])\n",
      "Write it without a loop"),
    q("q1", "a loop over the features",
      D + "    return sum((a[:, None, k] - b[None, :, k]) ** 2 for k in range(a.size(1)))\n",
      "a Python loop"),
    q("q1", "expansion scaling a in place", D + "    a2 = (a * a).sum(1, keepdim=True)\n    b2 = (b * b).sum(1)\n"
      "    return a.mul_(-2) @ b.T + a2 + b2\n", "changed its input"),
    q("q1", "float64 result", D + "    return ((a[:, None].double() - b[None].double()) ** 2).sum(-1)\n",
      "torch.float32 tensor"),
    q("q1", "a NumPy array", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1).numpy()\n", "torch.Tensor"),
]

# q2: (seq, batch, d) to one row per token and back
R = "def to_rows(x):\n    return x.transpose(0, 1).reshape(-1, x.size(-1))\n\n\n"
B = "def from_rows(rows, batch):\n    return rows.reshape(batch, -1, rows.size(-1)).transpose(0, 1)\n"
MISTAKES += [
    q("q2", "to_rows: a view straight to rows", "def to_rows(x):\n    return x.view(-1, x.size(-1))\n\n\n" + B,
      "the tokens of different sentences interleave"),
    q("q2", "to_rows: reshape without transpose", "def to_rows(x):\n    seq, batch, d = x.shape\n"
      "    return x.reshape(batch * seq, d)\n\n\n" + B, "Bring the batch axis in front"),
    q("q2", "to_rows: transpose, then view", "def to_rows(x):\n    return x.transpose(0, 1).view(-1, x.size(-1))\n\n\n"
      + B, ".contiguous()"),
    q("q2", "to_rows: stops after the transpose", "def to_rows(x):\n    return x.transpose(0, 1)\n\n\n" + B,
      "you stopped at (batch, seq, d)"),
    q("q2", "to_rows: features first", "def to_rows(x):\n    return x.permute(2, 1, 0).reshape(x.size(-1), -1)\n\n\n"
      + B, "keep the features as the last axis"),
    q("q2", "to_rows: fixed sizes", "def to_rows(x):\n    return x.transpose(0, 1).reshape(8, 4)\n\n\n" + B,
      "every size from"),
    q("q2", "to_rows: transpose_ in place",
      "def to_rows(x):\n    return x.transpose_(0, 1).reshape(-1, x.size(-1))\n\n\n" + B, "changed its input"),
    q("q2", "to_rows: flattened to one axis", "def to_rows(x):\n    return x.transpose(0, 1).flatten()\n\n\n" + B,
      "should become (batch * seq, d)"),
    q("q2", "from_rows: a view straight to (seq, batch, d)", R + "def from_rows(rows, batch):\n"
      "    return rows.view(-1, batch, rows.size(-1))\n", "the values land in the wrong sentences"),
    q("q2", "from_rows: stops at (batch, seq, d)", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, -1, rows.size(-1))\n", "swap the first two axes to (seq, batch, d)"),
    q("q2", "from_rows: seq and batch confused", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, batch, -1).transpose(0, 1)\n", "should become (seq, batch, d)"),
    q("q2", "from_rows: the wrong axes swapped", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, -1, rows.size(-1)).transpose(1, 2)\n", "the axes are in the wrong order"),
    q("q2", "from_rows: float64", R + "def from_rows(rows, batch):\n"
      "    return rows.double().view(batch, -1, rows.size(-1)).transpose(0, 1)\n", "torch.float32 tensor"),
    q("q2", "from_rows missing", R + "from_rows = 3\n", "should be a function"),
]

# q3: an nn.Module whose state_dict matches
P3 = PRELUDE + "import torch.nn as nn\nimport torch.nn.functional as F\n"
INIT = ("class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
        "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n")


def q3(name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson00", "q3", name, code, message, P3)


MISTAKES += [
    q3("layers in a plain list", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.layers = [nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_out)]\n\n"
       "    def forward(self, x):\n        return self.layers[1](torch.relu(self.layers[0](x)))\n", "not registered"),
    q3("layers in a plain dict", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.layers = {'linear1': nn.Linear(d_in, d_hidden),\n"
       "                       'linear2': nn.Linear(d_hidden, d_out)}\n\n    def forward(self, x):\n"
       "        return self.layers['linear2'](torch.relu(self.layers['linear1'](x)))\n", "plain Python dict"),
    q3("super().__init__() forgotten", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n",
       "Call super().__init__() first"),
    q3("not an nn.Module", "class TinyMLP:\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def __call__(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n",
       "should subclass nn.Module"),
    q3("other attribute names", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.fc1 = nn.Linear(d_in, d_hidden)\n"
       "        self.fc2 = nn.Linear(d_hidden, d_out)\n\n    def forward(self, x):\n"
       "        return self.fc2(torch.relu(self.fc1(x)))\n", "the attribute names of the layers"),
    q3("an nn.Sequential", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),\n"
       "                                 nn.Linear(d_hidden, d_out))\n\n    def forward(self, x):\n"
       "        return self.net(x)\n", "has no `linear1.weight`"),
    q3("no bias", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.linear1 = nn.Linear(d_in, d_hidden, bias=False)\n"
       "        self.linear2 = nn.Linear(d_hidden, d_out, bias=False)\n\n    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)))\n", "bias included"),
    q3("an extra parameter", INIT.replace("        self.linear2", "        self.scale = nn.Parameter(torch.ones(1))\n"
       "        self.linear2") + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x))) * self.scale\n", "`scale` (1,)"),
    q3("sizes in the order (d_in, d_out, d_hidden)", "class TinyMLP(nn.Module):\n"
       "    def __init__(self, d_in, d_out, d_hidden):\n        super().__init__()\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "in the order"),
    q3("weight shapes the other way round", "class TinyMLP(nn.Module):\n"
       "    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
       "        self.linear1 = nn.Linear(d_hidden, d_in)\n        self.linear2 = nn.Linear(d_out, d_hidden)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "stored as (out, in)"),
    q3("float64 layers", INIT.replace("d_hidden)\n        self.linear2", "d_hidden, dtype=torch.float64)\n"
       "        self.linear2").replace("d_out)\n\n", "d_out, dtype=torch.float64)\n\n")
       + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x.double()))).float()\n",
       "default float32"),
    q3("weights kept as buffers", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.linear1 = nn.Linear(d_in, d_hidden)\n"
       "        self.linear2 = nn.Linear(d_hidden, d_out)\n        w = self.linear2.weight.detach().clone()\n"
       "        del self.linear2.weight\n        self.linear2.register_buffer('weight', w)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "not a parameter"),
    q3("no ReLU", INIT + "    def forward(self, x):\n        return self.linear2(self.linear1(x))\n",
       "no activation in between"),
    q3("sigmoid instead of ReLU", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.sigmoid(self.linear1(x)))\n", "with sigmoid in between"),
    q3("ReLU on the output too", INIT + "    def forward(self, x):\n"
       "        return F.relu(self.linear2(F.relu(self.linear1(x))))\n", "the output went through ReLU too"),
    q3("forward misspelled", INIT + "    def foward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)))\n", "no method named `forward`"),
    q3("new layers built in forward", INIT + "    def forward(self, x):\n"
       "        hidden = nn.Linear(x.size(-1), self.linear1.out_features)(x)\n"
       "        return self.linear2(torch.relu(hidden))\n", "builds new layers"),
    q3("dropout added", INIT + "    def forward(self, x):\n"
       "        return self.linear2(F.dropout(torch.relu(self.linear1(x)), 0.5, self.training))\n",
       "the task has no dropout"),
    q3("graph cut with .detach()", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)).detach())\n", "no gradient reaches"),
    q3("forward under no_grad", INIT + "    def forward(self, x):\n        with torch.no_grad():\n"
       "            return self.linear2(torch.relu(self.linear1(x)))\n", "carries no gradient"),
    q3("ReLU on the input too", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(torch.relu(x))))\n", "the input went through ReLU too"),
    q3("a function, not a class", "def TinyMLP(d_in, d_hidden, d_out):\n"
       "    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))\n",
       "should be a class"),
]

ALTERNATIVES += [
    Alternative("lesson00", "q1", "unsqueeze and vector_norm", D + "    diff = a.unsqueeze(1) - b.unsqueeze(0)\n"
                "    return torch.linalg.vector_norm(diff, dim=-1) ** 2\n", PRELUDE),
    Alternative("lesson00", "q1", "the expansion ‖a‖² + ‖b‖² − 2a·b",
                D + "    return (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T\n", PRELUDE),
    Alternative("lesson00", "q1", "einsum on the differences", D + "    diff = a[:, None] - b[None]\n"
                "    return torch.einsum('nmd,nmd->nm', diff, diff)\n", PRELUDE),
    Alternative("lesson00", "q1", "expand, then multiply", D + "    n, m, d = a.size(0), b.size(0), a.size(1)\n"
                "    diff = a.view(n, 1, d).expand(n, m, d) - b.view(1, m, d).expand(n, m, d)\n"
                "    return (diff * diff).sum(dim=2)\n", PRELUDE),
    Alternative("lesson00", "q1", "expansion clamped at zero", D + "    cross = a @ b.transpose(0, 1)\n"
                "    return (a.pow(2).sum(-1, keepdim=True) - 2 * cross + b.pow(2).sum(-1)).clamp_min(0)\n", PRELUDE),
    Alternative("lesson00", "q2", "reshape both ways", R + B, PRELUDE),
    Alternative("lesson00", "q2", "permute and flatten",
                "def to_rows(x):\n    return x.permute(1, 0, 2).flatten(0, 1)\n\n\ndef from_rows(rows, batch):\n"
                "    return rows.unflatten(0, (batch, -1)).permute(1, 0, 2)\n", PRELUDE),
    Alternative("lesson00", "q2", "movedim, sizes named", "def to_rows(x):\n    seq, batch, d = x.shape\n"
                "    return torch.movedim(x, 1, 0).contiguous().view(batch * seq, d)\n\n\n"
                "def from_rows(rows, batch):\n    n, d = rows.shape\n    seq = n // batch\n"
                "    return rows.view(batch, seq, d).movedim(0, 1)\n", PRELUDE),
    Alternative("lesson00", "q2", "stacking and concatenating sentences", "def to_rows(x):\n"
                "    return torch.cat([x[:, b] for b in range(x.size(1))])\n\n\n"
                "def from_rows(rows, batch):\n    return torch.stack(rows.chunk(batch), dim=1)\n", PRELUDE),
    Alternative("lesson00", "q2", "lambdas with .mT-free swapaxes", "to_rows = lambda x: x.swapaxes(0, 1).reshape(-1, "
                "x.shape[2])\nfrom_rows = lambda rows, batch: rows.reshape(batch, rows.shape[0] // batch, "
                "rows.shape[1]).swapaxes(0, 1)\n", PRELUDE),
    Alternative("lesson00", "q3", "F.relu and a docstring", INIT.replace("        super()", "        \"\"\"A tiny MLP."
                "\"\"\"\n        super()") + "    def forward(self, x):\n        h = F.relu(self.linear1(x))\n"
                "        return self.linear2(h)\n", P3),
    Alternative("lesson00", "q3", "an nn.ReLU module and keyword sizes", "class TinyMLP(nn.Module):\n"
                "    def __init__(self, d_in, d_hidden, d_out, activation=nn.ReLU):\n        super().__init__()\n"
                "        self.linear1 = nn.Linear(in_features=d_in, out_features=d_hidden)\n"
                "        self.act = activation()\n        self.linear2 = nn.Linear(d_hidden, d_out, bias=True)\n\n"
                "    def forward(self, x):\n        return self.linear2(self.act(self.linear1(x)))\n", P3),
    Alternative("lesson00", "q3", "setattr in a loop", "class TinyMLP(nn.Module):\n"
                "    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
                "        for name, (i, o) in {'linear1': (d_in, d_hidden), 'linear2': (d_hidden, d_out)}.items():\n"
                "            setattr(self, name, nn.Linear(i, o))\n\n    def forward(self, x):\n"
                "        return self.linear2(self.linear1(x).clamp(min=0))\n", P3),
    Alternative("lesson00", "q3", "a plain list beside the registered layers", INIT.replace(
                "d_out)\n\n", "d_out)\n        self.order = ['linear1', 'linear2']\n\n")
                + "    def forward(self, x):\n        x = self.linear1(x)\n        x = torch.relu(x)\n"
                "        return self.linear2(x)\n", P3),
    Alternative("lesson00", "q3", "F.linear on the registered weights", INIT + "    def forward(self, x):\n"
                "        h = F.linear(x, self.linear1.weight, self.linear1.bias).relu()\n"
                "        return F.linear(h, self.linear2.weight, self.linear2.bias)\n", P3),
]

# q4: the squared error whose broadcast stalls the fit
E = "def fixed_squared_error(predictions, targets):\n"
MISTAKES += [
    q("q4", "the bug left in", E + "    return ((predictions - targets) ** 2).mean()\n", "still the broadcast"),
    q("q4", "targets given an axis in front", E + "    return ((predictions - targets[None, :]) ** 2).mean()\n",
      "still the broadcast"),
    q("q4", "sum, not mean", E + "    return ((predictions[:, 0] - targets) ** 2).sum()\n", "the sum of the squared"),
    q("q4", "root of the mean", E + "    return ((predictions[:, 0] - targets) ** 2).mean().sqrt()\n",
      "leave out the square root"),
    q("q4", "absolute errors", E + "    return (predictions[:, 0] - targets).abs().mean()\n", "absolute errors"),
    q("q4", "mean before squaring", E + "    return (predictions[:, 0] - targets).mean() ** 2\n",
      "the mean was taken before squaring"),
    q("q4", "one loss per point", E + "    return (predictions[:, 0] - targets) ** 2\n", "a loss is one number"),
    q("q4", "detached", E + "    return ((predictions.detach()[:, 0] - targets) ** 2).mean()\n",
      "backward cannot run through it"),
    q("q4", "a Python float", E + "    return ((predictions[:, 0] - targets) ** 2).mean().item()\n", "torch.Tensor"),
    q("q4", "squeezed in place", E + "    predictions.squeeze_(1)\n    return ((predictions - targets) ** 2).mean()\n",
      "changed its input"),
]
ALTERNATIVES += [
    Alternative("lesson00", "q4", "targets given an axis",
                E + "    return ((predictions - targets[:, None]) ** 2).mean()\n", PRELUDE),
    Alternative("lesson00", "q4", "F.mse_loss on a view", "import torch.nn.functional as F\n\n\n" + E
                + "    return F.mse_loss(predictions.view(-1), targets)\n", PRELUDE),
    Alternative("lesson00", "q4", "squeeze(-1) and pow",
                E + "    return (predictions.squeeze(-1) - targets).pow(2).mean()\n", PRELUDE),
    Alternative("lesson00", "q4", "squeeze() everywhere", E + "    diff = predictions.squeeze() - targets\n"
                "    return (diff * diff).sum() / len(targets)\n", PRELUDE),
]
