"""Typical wrong answers to the exercises of lesson 00 (setup), each with the phrase its feedback must contain."""
from . import Alternative, Mistake

PRELUDE = "import torch\nfrom course_utils import seed_everything\n"


def q(exercise: str, name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson00", exercise, name, code, message, PRELUDE)


MISTAKES = [
    q("q1", "float ids", "token_batch = torch.rand(4, 10)\n", "torch.long"),
    q("q1", "inclusive upper bound assumed", "token_batch = torch.arange(961, 1001).view(4, 10)\n", "exclusive"),
    q("q1", "(seq, batch)", "token_batch = torch.randint(0, 1000, (10, 4))\n", "(4, 10)"),
    q("q1", "a list", "token_batch = [[0] * 10] * 4\n", "torch.Tensor"),
    q("q2", "device hard-coded", "def device_of(tensor):\n    return torch.device('cpu')\n", "do not hard-code"),
    q("q2", "a string", "def device_of(tensor):\n    return str(tensor.device)\n", "torch.device"),
    q("q2", "crashes", "def device_of(tensor):\n    return tensor.nonexistent\n", "AttributeError"),
    q("q3", "seeded once for both draws", "def same_draws():\n    seed_everything(0)\n"
      "    return torch.rand(3), torch.rand(3)\n", "before *each* draw"),
    q("q3", "never seeds: a copy", "def same_draws():\n    first = torch.rand(3)\n    return first, first.clone()\n",
      "only because one is a copy"),
    q("q3", "constants", "def same_draws():\n    return torch.zeros(3), torch.zeros(3)\n", "not constants"),
]
MISTAKES += [
    # q1: right shape and dtype, but not drawn from the whole vocabulary
    q("q1", "a constant batch", "token_batch = torch.zeros(4, 10, dtype=torch.long)\n", "not drawn at random"),
    q("q1", "drawn from a vocabulary of 10", "token_batch = torch.randint(0, 10, (4, 10))\n", "only span"),
    q("q1", "counting, not drawing", "token_batch = torch.arange(40).view(4, 10)\n", "only span"),
    q("q1", "int32 ids", "token_batch = torch.randint(0, 1000, (4, 10), dtype=torch.int32)\n", "torch.long"),
    q("q1", "integer values in a float tensor", "token_batch = torch.randint(0, 1000, (4, 10)).float()\n",
      "torch.long"),
    # q2: right on the CPU only, or a device rebuilt from its type
    q("q2", "guessed from cuda.is_available()",
      "def device_of(tensor):\n    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n",
      "do not hard-code"),
    q("q2", "rebuilt from the type: the index is lost",
      "def device_of(tensor):\n    return torch.device(tensor.device.type)\n", "loses the device's index"),
    q("q2", "get_device()", "def device_of(tensor):\n    return tensor.get_device()\n", "get_device()"),
    q("q2", "guessed from is_cuda",
      "def device_of(tensor):\n    return torch.device('cuda:0') if tensor.is_cuda else torch.device('cpu')\n",
      "do not hard-code"),
    q("q2", "the type as a string", "def device_of(tensor):\n    return tensor.device.type\n", "the string 'cpu'"),
    # q3: equal numbers for the wrong reason
    q("q3", "drawn once at definition, replayed", "seed_everything(0)\nA = torch.rand(3)\n\n\n"
      "def same_draws():\n    return A.clone(), A.clone()\n", "drew no random number"),
    q("q3", "seeded, one draw copied", "def same_draws():\n    seed_everything(0)\n    first = torch.rand(3)\n"
      "    return first, first.clone()\n", "only because one is a copy"),
    q("q3", "the same tensor twice", "def same_draws():\n    seed_everything(0)\n    first = torch.rand(3)\n"
      "    seed_everything(0)\n    second = torch.rand(3)\n    return first, first\n", "returned twice"),
    q("q3", "kept from the first call", "CACHE = []\n\n\ndef same_draws():\n    if not CACHE:\n"
      "        seed_everything(0)\n        CACHE.append(torch.rand(3))\n        seed_everything(0)\n"
      "        CACHE.append(torch.rand(3))\n    return CACHE[0].clone(), CACHE[1].clone()\n", "drew no new random"),
    q("q3", "two seeds", "def same_draws():\n    seed_everything(0)\n    first = torch.rand(3)\n"
      "    seed_everything(1)\n    return first, torch.rand(3)\n", "before *each* draw"),
    q("q3", "four numbers", "def same_draws():\n    seed_everything(0)\n    first = torch.rand(4)\n"
      "    seed_everything(0)\n    return first, torch.rand(4)\n", "draw 3 each"),
]

ALTERNATIVES = [
    Alternative("lesson00", "q1", "randint without low", "token_batch = torch.randint(1000, (4, 10))\n", PRELUDE),
    Alternative("lesson00", "q1", "uniform floats scaled down to ids",
                "token_batch = (torch.rand(4, 10) * 1000).long()\n", PRELUDE),
    Alternative("lesson00", "q1", "NumPy draw", "import numpy as np\n"
                "token_batch = torch.from_numpy(np.random.randint(0, 1000, size=(4, 10)).astype(np.int64))\n",
                PRELUDE),
    Alternative("lesson00", "q1", "own generator", "token_batch = torch.randint(0, 1000, (4, 10), "
                "generator=torch.Generator().manual_seed(3))\n", PRELUDE),
    Alternative("lesson00", "q2", "through a string", "def device_of(tensor):\n"
                "    return torch.device(str(tensor.device))\n", PRELUDE),
    Alternative("lesson00", "q2", "type and index", "def device_of(tensor):\n"
                "    return torch.device(tensor.device.type, tensor.device.index)\n", PRELUDE),
    Alternative("lesson00", "q2", "a lambda on .data", "device_of = lambda tensor: tensor.data.device\n", PRELUDE),
    Alternative("lesson00", "q3", "torch.manual_seed", "def same_draws():\n    torch.manual_seed(0)\n"
                "    a = torch.randn(3)\n    torch.manual_seed(0)\n    b = torch.randn(3)\n    return a, b\n", PRELUDE),
    Alternative("lesson00", "q3", "a generator seeded before each draw", "def same_draws():\n"
                "    g = torch.Generator()\n    g.manual_seed(42)\n    a = torch.rand(3, generator=g)\n"
                "    g.manual_seed(42)\n    return a, torch.rand(3, generator=g)\n", PRELUDE),
    Alternative("lesson00", "q3", "two generators, a list", "def same_draws():\n"
                "    return [torch.rand(3, generator=torch.Generator().manual_seed(7)) for _ in range(2)]\n", PRELUDE),
    Alternative("lesson00", "q3", "NumPy seeded", "import numpy as np\n\n\ndef same_draws():\n"
                "    np.random.seed(0)\n    a = torch.from_numpy(np.random.rand(3))\n    np.random.seed(0)\n"
                "    return a, torch.from_numpy(np.random.rand(3))\n", PRELUDE),
]

# q4: every row of a against every row of b, by broadcasting
D = "def pairwise_sq_distances(a, b):\n"
MISTAKES += [
    q("q4", "no new axes: row i against row i", D + "    return ((a - b) ** 2).sum(-1)\n", "an axis of size 1"),
    q("q4", "(m, n): the axes the other way round", D + "    return ((a[None, :, :] - b[:, None, :]) ** 2).sum(-1)\n",
      "a's rows run down the result"),
    q("q4", "distances, not squared", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1).sqrt()\n",
      "leave out the square root"),
    q("q4", "differences not squared", D + "    return (a[:, None] - b[None]).sum(-1)\n", "square each difference"),
    q("q4", "absolute differences", D + "    return (a[:, None] - b[None]).abs().sum(-1)\n",
      "square each difference"),
    q("q4", "mean over the features", D + "    return ((a[:, None] - b[None]) ** 2).mean(-1)\n", "sum them"),
    q("q4", "not summed", D + "    return (a[:, None] - b[None]) ** 2\n", "still need to be summed"),
    q("q4", "summed over b's rows", D + "    return ((a[:, None] - b[None]) ** 2).sum(1)\n",
      "the sum ran over a row axis"),
    q("q4", "dot products", D + "    return a @ b.T\n", "dot products"),
    q("q4", "expansion without the 2", D + "    return (a * a).sum(-1)[:, None] + (b * b).sum(-1)[None] - a @ b.T\n",
      "the factor 2"),
    q("q4", "expansion with the sign flipped",
      D + "    return (a ** 2).sum(1, keepdim=True) + (b ** 2).sum(1) + 2 * a @ b.T\n", "the sign of the cross term"),
    q("q4", "torch.cdist squared", D + "    return torch.cdist(a, b) ** 2\n", "calls torch.cdist"),
    q("q4", "torch.cdist imported under another name", "from torch import cdist as all_distances\n\n\n" + D
      + "    return all_distances(a, b).pow(2)\n", "calls torch.cdist"),
    q("q4", "two loops", D + "    out = torch.zeros(a.size(0), b.size(0), dtype=a.dtype)\n"
      "    for i in range(a.size(0)):\n        for j in range(b.size(0)):\n"
      "            out[i, j] = ((a[i] - b[j]) ** 2).sum()\n    return out\n", "a Python loop"),
    q("q4", "a loop over a's rows", D + "    return torch.stack([((row - b) ** 2).sum(-1) for row in a])\n",
      "Write it without a loop"),
    q("q4", "a loop over the features",
      D + "    return sum((a[:, None, k] - b[None, :, k]) ** 2 for k in range(a.size(1)))\n",
      "a Python loop"),
    q("q4", "expansion scaling a in place", D + "    a2 = (a * a).sum(1, keepdim=True)\n    b2 = (b * b).sum(1)\n"
      "    return a.mul_(-2) @ b.T + a2 + b2\n", "changed its input"),
    q("q4", "float64 result", D + "    return ((a[:, None].double() - b[None].double()) ** 2).sum(-1)\n",
      "torch.float32 tensor"),
    q("q4", "a NumPy array", D + "    return ((a[:, None] - b[None]) ** 2).sum(-1).numpy()\n", "torch.Tensor"),
]

# q5: (seq, batch, d) to one row per token and back
R = "def to_rows(x):\n    return x.transpose(0, 1).reshape(-1, x.size(-1))\n\n\n"
B = "def from_rows(rows, batch):\n    return rows.reshape(batch, -1, rows.size(-1)).transpose(0, 1)\n"
MISTAKES += [
    q("q5", "to_rows: a view straight to rows", "def to_rows(x):\n    return x.view(-1, x.size(-1))\n\n\n" + B,
      "the tokens of different sentences interleave"),
    q("q5", "to_rows: reshape without transpose", "def to_rows(x):\n    seq, batch, d = x.shape\n"
      "    return x.reshape(batch * seq, d)\n\n\n" + B, "Bring the batch axis in front"),
    q("q5", "to_rows: transpose, then view", "def to_rows(x):\n    return x.transpose(0, 1).view(-1, x.size(-1))\n\n\n"
      + B, ".contiguous()"),
    q("q5", "to_rows: stops after the transpose", "def to_rows(x):\n    return x.transpose(0, 1)\n\n\n" + B,
      "you stopped at (batch, seq, d)"),
    q("q5", "to_rows: features first", "def to_rows(x):\n    return x.permute(2, 1, 0).reshape(x.size(-1), -1)\n\n\n"
      + B, "keep the features as the last axis"),
    q("q5", "to_rows: fixed sizes", "def to_rows(x):\n    return x.transpose(0, 1).reshape(8, 4)\n\n\n" + B,
      "every size from"),
    q("q5", "to_rows: transpose_ in place",
      "def to_rows(x):\n    return x.transpose_(0, 1).reshape(-1, x.size(-1))\n\n\n" + B, "changed its input"),
    q("q5", "to_rows: flattened to one axis", "def to_rows(x):\n    return x.transpose(0, 1).flatten()\n\n\n" + B,
      "should become (batch * seq, d)"),
    q("q5", "from_rows: a view straight to (seq, batch, d)", R + "def from_rows(rows, batch):\n"
      "    return rows.view(-1, batch, rows.size(-1))\n", "the values land in the wrong sentences"),
    q("q5", "from_rows: stops at (batch, seq, d)", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, -1, rows.size(-1))\n", "swap the first two axes to (seq, batch, d)"),
    q("q5", "from_rows: seq and batch confused", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, batch, -1).transpose(0, 1)\n", "should become (seq, batch, d)"),
    q("q5", "from_rows: the wrong axes swapped", R + "def from_rows(rows, batch):\n"
      "    return rows.view(batch, -1, rows.size(-1)).transpose(1, 2)\n", "the axes are in the wrong order"),
    q("q5", "from_rows: float64", R + "def from_rows(rows, batch):\n"
      "    return rows.double().view(batch, -1, rows.size(-1)).transpose(0, 1)\n", "torch.float32 tensor"),
    q("q5", "from_rows missing", R + "from_rows = 3\n", "should be a function"),
]

# q6: an nn.Module whose state_dict matches
P6 = PRELUDE + "import torch.nn as nn\nimport torch.nn.functional as F\n"
INIT = ("class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
        "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n")


def q6(name: str, code: str, message: str) -> Mistake:
    return Mistake("lesson00", "q6", name, code, message, P6)


MISTAKES += [
    q6("layers in a plain list", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.layers = [nn.Linear(d_in, d_hidden), nn.Linear(d_hidden, d_out)]\n\n"
       "    def forward(self, x):\n        return self.layers[1](torch.relu(self.layers[0](x)))\n", "not registered"),
    q6("layers in a plain dict", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.layers = {'linear1': nn.Linear(d_in, d_hidden),\n"
       "                       'linear2': nn.Linear(d_hidden, d_out)}\n\n    def forward(self, x):\n"
       "        return self.layers['linear2'](torch.relu(self.layers['linear1'](x)))\n", "plain Python dict"),
    q6("super().__init__() forgotten", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n",
       "Call super().__init__() first"),
    q6("not an nn.Module", "class TinyMLP:\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def __call__(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n",
       "should subclass nn.Module"),
    q6("other attribute names", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.fc1 = nn.Linear(d_in, d_hidden)\n"
       "        self.fc2 = nn.Linear(d_hidden, d_out)\n\n    def forward(self, x):\n"
       "        return self.fc2(torch.relu(self.fc1(x)))\n", "the attribute names of the layers"),
    q6("an nn.Sequential", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.net = nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(),\n"
       "                                 nn.Linear(d_hidden, d_out))\n\n    def forward(self, x):\n"
       "        return self.net(x)\n", "has no `linear1.weight`"),
    q6("no bias", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.linear1 = nn.Linear(d_in, d_hidden, bias=False)\n"
       "        self.linear2 = nn.Linear(d_hidden, d_out, bias=False)\n\n    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)))\n", "bias included"),
    q6("an extra parameter", INIT.replace("        self.linear2", "        self.scale = nn.Parameter(torch.ones(1))\n"
       "        self.linear2") + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x))) * self.scale\n", "`scale` (1,)"),
    q6("sizes in the order (d_in, d_out, d_hidden)", "class TinyMLP(nn.Module):\n"
       "    def __init__(self, d_in, d_out, d_hidden):\n        super().__init__()\n"
       "        self.linear1 = nn.Linear(d_in, d_hidden)\n        self.linear2 = nn.Linear(d_hidden, d_out)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "in the order"),
    q6("weight shapes the other way round", "class TinyMLP(nn.Module):\n"
       "    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
       "        self.linear1 = nn.Linear(d_hidden, d_in)\n        self.linear2 = nn.Linear(d_out, d_hidden)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "stored as (out, in)"),
    q6("float64 layers", INIT.replace("d_hidden)\n        self.linear2", "d_hidden, dtype=torch.float64)\n"
       "        self.linear2").replace("d_out)\n\n", "d_out, dtype=torch.float64)\n\n")
       + "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x.double()))).float()\n",
       "default float32"),
    q6("weights kept as buffers", "class TinyMLP(nn.Module):\n    def __init__(self, d_in, d_hidden, d_out):\n"
       "        super().__init__()\n        self.linear1 = nn.Linear(d_in, d_hidden)\n"
       "        self.linear2 = nn.Linear(d_hidden, d_out)\n        w = self.linear2.weight.detach().clone()\n"
       "        del self.linear2.weight\n        self.linear2.register_buffer('weight', w)\n\n"
       "    def forward(self, x):\n        return self.linear2(torch.relu(self.linear1(x)))\n", "not a parameter"),
    q6("no ReLU", INIT + "    def forward(self, x):\n        return self.linear2(self.linear1(x))\n",
       "no activation in between"),
    q6("sigmoid instead of ReLU", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.sigmoid(self.linear1(x)))\n", "with sigmoid in between"),
    q6("ReLU on the output too", INIT + "    def forward(self, x):\n"
       "        return F.relu(self.linear2(F.relu(self.linear1(x))))\n", "the output went through ReLU too"),
    q6("forward misspelled", INIT + "    def foward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)))\n", "no method named `forward`"),
    q6("new layers built in forward", INIT + "    def forward(self, x):\n"
       "        hidden = nn.Linear(x.size(-1), self.linear1.out_features)(x)\n"
       "        return self.linear2(torch.relu(hidden))\n", "builds new layers"),
    q6("dropout added", INIT + "    def forward(self, x):\n"
       "        return self.linear2(F.dropout(torch.relu(self.linear1(x)), 0.5, self.training))\n",
       "the task has no dropout"),
    q6("graph cut with .detach()", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(x)).detach())\n", "no gradient reaches"),
    q6("forward under no_grad", INIT + "    def forward(self, x):\n        with torch.no_grad():\n"
       "            return self.linear2(torch.relu(self.linear1(x)))\n", "carries no gradient"),
    q6("ReLU on the input too", INIT + "    def forward(self, x):\n"
       "        return self.linear2(torch.relu(self.linear1(torch.relu(x))))\n", "the input went through ReLU too"),
    q6("a function, not a class", "def TinyMLP(d_in, d_hidden, d_out):\n"
       "    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))\n",
       "should be a class"),
]

ALTERNATIVES += [
    Alternative("lesson00", "q4", "unsqueeze and vector_norm", D + "    diff = a.unsqueeze(1) - b.unsqueeze(0)\n"
                "    return torch.linalg.vector_norm(diff, dim=-1) ** 2\n", PRELUDE),
    Alternative("lesson00", "q4", "the expansion ‖a‖² + ‖b‖² − 2a·b",
                D + "    return (a * a).sum(1, keepdim=True) + (b * b).sum(1) - 2 * a @ b.T\n", PRELUDE),
    Alternative("lesson00", "q4", "einsum on the differences", D + "    diff = a[:, None] - b[None]\n"
                "    return torch.einsum('nmd,nmd->nm', diff, diff)\n", PRELUDE),
    Alternative("lesson00", "q4", "expand, then multiply", D + "    n, m, d = a.size(0), b.size(0), a.size(1)\n"
                "    diff = a.view(n, 1, d).expand(n, m, d) - b.view(1, m, d).expand(n, m, d)\n"
                "    return (diff * diff).sum(dim=2)\n", PRELUDE),
    Alternative("lesson00", "q4", "expansion clamped at zero", D + "    cross = a @ b.transpose(0, 1)\n"
                "    return (a.pow(2).sum(-1, keepdim=True) - 2 * cross + b.pow(2).sum(-1)).clamp_min(0)\n", PRELUDE),
    Alternative("lesson00", "q5", "reshape both ways", R + B, PRELUDE),
    Alternative("lesson00", "q5", "permute and flatten",
                "def to_rows(x):\n    return x.permute(1, 0, 2).flatten(0, 1)\n\n\ndef from_rows(rows, batch):\n"
                "    return rows.unflatten(0, (batch, -1)).permute(1, 0, 2)\n", PRELUDE),
    Alternative("lesson00", "q5", "movedim, sizes named", "def to_rows(x):\n    seq, batch, d = x.shape\n"
                "    return torch.movedim(x, 1, 0).contiguous().view(batch * seq, d)\n\n\n"
                "def from_rows(rows, batch):\n    n, d = rows.shape\n    seq = n // batch\n"
                "    return rows.view(batch, seq, d).movedim(0, 1)\n", PRELUDE),
    Alternative("lesson00", "q5", "stacking and concatenating sentences", "def to_rows(x):\n"
                "    return torch.cat([x[:, b] for b in range(x.size(1))])\n\n\n"
                "def from_rows(rows, batch):\n    return torch.stack(rows.chunk(batch), dim=1)\n", PRELUDE),
    Alternative("lesson00", "q5", "lambdas with .mT-free swapaxes", "to_rows = lambda x: x.swapaxes(0, 1).reshape(-1, "
                "x.shape[2])\nfrom_rows = lambda rows, batch: rows.reshape(batch, rows.shape[0] // batch, "
                "rows.shape[1]).swapaxes(0, 1)\n", PRELUDE),
    Alternative("lesson00", "q6", "F.relu and a docstring", INIT.replace("        super()", "        \"\"\"A tiny MLP."
                "\"\"\"\n        super()") + "    def forward(self, x):\n        h = F.relu(self.linear1(x))\n"
                "        return self.linear2(h)\n", P6),
    Alternative("lesson00", "q6", "an nn.ReLU module and keyword sizes", "class TinyMLP(nn.Module):\n"
                "    def __init__(self, d_in, d_hidden, d_out, activation=nn.ReLU):\n        super().__init__()\n"
                "        self.linear1 = nn.Linear(in_features=d_in, out_features=d_hidden)\n"
                "        self.act = activation()\n        self.linear2 = nn.Linear(d_hidden, d_out, bias=True)\n\n"
                "    def forward(self, x):\n        return self.linear2(self.act(self.linear1(x)))\n", P6),
    Alternative("lesson00", "q6", "setattr in a loop", "class TinyMLP(nn.Module):\n"
                "    def __init__(self, d_in, d_hidden, d_out):\n        super().__init__()\n"
                "        for name, (i, o) in {'linear1': (d_in, d_hidden), 'linear2': (d_hidden, d_out)}.items():\n"
                "            setattr(self, name, nn.Linear(i, o))\n\n    def forward(self, x):\n"
                "        return self.linear2(self.linear1(x).clamp(min=0))\n", P6),
    Alternative("lesson00", "q6", "a plain list beside the registered layers", INIT.replace(
                "d_out)\n\n", "d_out)\n        self.order = ['linear1', 'linear2']\n\n")
                + "    def forward(self, x):\n        x = self.linear1(x)\n        x = torch.relu(x)\n"
                "        return self.linear2(x)\n", P6),
    Alternative("lesson00", "q6", "F.linear on the registered weights", INIT + "    def forward(self, x):\n"
                "        h = F.linear(x, self.linear1.weight, self.linear1.bias).relu()\n"
                "        return F.linear(h, self.linear2.weight, self.linear2.bias)\n", P6),
]
