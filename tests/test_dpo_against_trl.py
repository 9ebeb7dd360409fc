"""Lesson 11's DPO loss against a well-kept library's: Hugging Face TRL's ``DPOTrainer`` (sigmoid loss, the
paper's). Runs where ``trl`` is installed (it is not a course requirement: ``pip install trl``); skipped elsewhere.

TRL computes the loss inside its trainer, from the model's per-token log-probabilities of the completion tokens;
a stand-in trainer gives it exactly what it reads (its settings, and an identity ``gather`` for one process), and
a stand-in model returns TRL's own ``selective_log_softmax`` of the course model's logits. The two must agree on
which tokens are scored (the response after the prompt, never padding), on the chosen-rows-first layout and on the
mean over pairs.
"""
from __future__ import annotations

import collections
import types

import pytest
import torch

from course_utils import losses
from course_utils.instruct import ChatTokenizer, grow_vocabulary, load_base_gpt, preference_batch

trl = pytest.importorskip("trl")
from trl.trainer.utils import selective_log_softmax  # noqa: E402

TRIPLES = [("What does a.b do?", "Return a value.", "This module is old."),
           ("What does c.d do?", "Close the file.", "The tests run on every platform."),
           ("What does e.f do?", "Open it.", "No.")]


def trl_dpo_loss(model, ids, mask, reference_logps, beta):
    """TRL's ``DPOTrainer._compute_loss`` on one preference batch (chosen rows first, as TRL concatenates them)."""
    n = len(ids) // 2
    per_token = selective_log_softmax(model(ids[:, :-1]).float(), ids[:, 1:]) * mask[:, 1:]
    outputs = types.SimpleNamespace(log_probs=per_token, entropy=torch.zeros_like(per_token),
                                    mean_logits=torch.zeros_like(per_token), is_top1=torch.zeros_like(mask[:, 1:]))
    one_process = types.SimpleNamespace(device="cpu", gather_for_metrics=lambda x: x, gather=lambda x: x)
    trainer = types.SimpleNamespace(
        model=model, accelerator=one_process, aux_loss_enabled=False, ld_alpha=None, precompute_ref_logps=True,
        f_divergence_type="reverse_kl", loss_types=["sigmoid"], loss_weights=[1.0], beta=beta, label_smoothing=0.0,
        use_weighting=False, _metrics={"train": collections.defaultdict(list), "eval": collections.defaultdict(list)},
        _total_train_tokens=0, _tp_size=1)
    inputs = {"input_ids": ids, "attention_mask": ids != 0, "completion_mask": mask.long(),
              "ref_chosen_logps": reference_logps[:n], "ref_rejected_logps": reference_logps[n:]}
    return trl.DPOTrainer._compute_loss(trainer, lambda **_: outputs, inputs, False)


@pytest.mark.parametrize("beta", [0.1, 0.5, 2.0])
def test_dpo_batch_loss_equals_trls(beta):
    base, bpe, _ = load_base_gpt()
    tokenizer = ChatTokenizer(bpe)
    model = grow_vocabulary(base, 2).eval()
    ids, mask = preference_batch(tokenizer, TRIPLES)
    reference_logps = -torch.rand(len(ids), generator=torch.Generator().manual_seed(int(beta * 10))) * 40
    ours = losses.dpo_batch_loss_sum(model, (ids, mask, reference_logps), beta) / len(TRIPLES)
    torch.testing.assert_close(ours, trl_dpo_loss(model, ids, mask, reference_logps, beta))
