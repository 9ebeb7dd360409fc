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
