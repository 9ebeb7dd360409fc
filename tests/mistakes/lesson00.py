"""Typical wrong answers to the exercises of lesson 00 (setup), each with the phrase its feedback must contain."""
from . import Mistake

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
