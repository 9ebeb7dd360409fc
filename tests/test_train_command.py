"""``python -m course_utils.train``: resume equals an uninterrupted run, safe checkpoints, clear flag errors,
the code paths of the GPU cells (autocast, gradient checkpointing, memory measurement) exercised on CPU,
and the task losses equal the lessons' definitions."""
import json
import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from course_utils import losses, mlm, tasks, train
from course_utils.errors import CourseValueError
from course_utils.memory import autocast_context, checkpoint_layers, saved_activation_bytes, step_memory
from course_utils.training import make_loader

ROOT = Path(__file__).resolve().parents[1]
MLM_TINY = ["mlm", "--size", "tiny", "--threads", "1", "--no-progress", "--no-eval", "--epochs", "2"]
TRANSLATOR_TINY = ["translator", "--size", "tiny", "--threads", "1", "--no-progress", "--no-eval"]


def final_weights(folder):
    """The model weights of a run's last checkpoint."""
    return train.load_checkpoint(folder / train.CHECKPOINT_NAME)["model"]


@pytest.fixture(scope="module")
def translator_task():
    return tasks.build_task("translator", "tiny")


def test_stop_and_resume_gives_the_weights_of_an_uninterrupted_run(tmp_path):
    # the mlm task has every kind of randomness: shuffled batches, BERT masks, dropout
    train.main(MLM_TINY + ["--checkpoint-dir", str(tmp_path / "full")])
    stopped = train.main(MLM_TINY + ["--checkpoint-dir", str(tmp_path / "part"), "--max-steps", "5"])
    assert stopped["step"] == 5 < stopped["total_steps"]
    resumed = train.main(MLM_TINY + ["--checkpoint-dir", str(tmp_path / "part"), "--resume"])
    assert resumed["step"] == resumed["total_steps"] > 8   # the resumed part crosses into the second epoch
    full, part = (train.load_checkpoint(tmp_path / run / train.CHECKPOINT_NAME) for run in ("full", "part"))
    assert all(torch.equal(full["model"][name], part["model"][name]) for name in full["model"])
    assert full["train_loss"] == part["train_loss"] and len(set(full["train_loss"])) == resumed["step"]


def only_plain_values(value) -> bool:
    if isinstance(value, dict):
        return all(isinstance(k, (str, int)) and only_plain_values(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return all(only_plain_values(v) for v in value)
    return value is None or isinstance(value, (torch.Tensor, str, int, float, bool))


def test_checkpoint_is_weights_only_and_written_atomically(tmp_path):
    train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path), "--max-steps", "2"])
    path = tmp_path / train.CHECKPOINT_NAME
    checkpoint = torch.load(path, weights_only=True)
    assert only_plain_values(checkpoint)
    assert {"model", "optimizer", "scheduler", "random", "step", "run"} <= set(checkpoint)
    assert not list(tmp_path.glob("*.tmp"))               # the temporary file was renamed
    model = tasks.build_task("translator", "tiny").build_model()
    model.load_state_dict(checkpoint["model"])


@pytest.mark.parametrize("flags, message", [
    (["translator", "--steps", "0"], "--steps must be a positive integer"),
    (["translator", "--epochs", "2", "--steps", "5"], "either --epochs or --steps"),
    (["transformer"], "unknown task 'transformer'"),
    (["translator", "--size", "huge"], "--size must be one of tiny, lesson, large"),
    (["translator", "--device", "tpu"], "--device must be one of auto, cpu, cuda"),
    (["translator", "--amp-dtype", "fp8"], "--amp-dtype must be one of bf16, fp16"),
    (["translator", "--resume"], "--resume needs --checkpoint-dir"),
    (["translator", "--lr", "-1"], "--lr must be positive"),
])
def test_bad_flags_give_course_errors(flags, message):
    with pytest.raises(CourseValueError, match=message):
        train.main(flags)


def test_resume_errors_name_the_problem(tmp_path):
    with pytest.raises(CourseValueError, match="no checkpoint at"):
        train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path), "--resume"])
    train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path), "--max-steps", "1"])
    with pytest.raises(CourseValueError, match="accumulate=1"):
        train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path), "--resume", "--accumulate", "2"])
    with pytest.raises(CourseValueError, match="is more than the"):
        train.main(TRANSLATOR_TINY + ["--accumulate", "99"])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message shown on machines without CUDA")
def test_cuda_without_a_gpu_is_a_clear_error():
    with pytest.raises(CourseValueError, match="torch.cuda.is_available"):
        train.main(TRANSLATOR_TINY + ["--device", "cuda"])


def test_help_documents_every_flag_and_multi_node_launch():
    text = train.build_parser().format_help()
    for flag in ("--epochs", "--steps", "--max-steps", "--size", "--device", "--amp", "--checkpoint-dir",
                 "--resume", "--seed", "--threads", "--accumulate", "--nnodes", "--node_rank", "--rdzv-endpoint",
                 "--nproc_per_node"):
        assert flag in text, flag


def test_amp_on_cpu_trains_in_bfloat16(tmp_path):
    plain = train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path / "fp32")])
    mixed = train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path / "bf16"), "--amp"])
    assert abs(mixed["train loss"] - plain["train loss"]) < 0.1          # the same training, ...
    fp32, bf16 = final_weights(tmp_path / "fp32"), final_weights(tmp_path / "bf16")
    assert any(not torch.equal(fp32[name], bf16[name]) for name in fp32)   # ... computed in another precision
    assert all(weight.dtype == torch.float32 for weight in bf16.values())  # the master weights stay float32
    with autocast_context(torch.device("cpu"), "bf16"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16


def test_fp16_keeps_its_loss_scaler_across_a_resume(tmp_path):
    fp16 = TRANSLATOR_TINY + ["--amp", "--amp-dtype", "fp16", "--checkpoint-dir", str(tmp_path)]
    train.main(fp16 + ["--max-steps", "4"])
    assert train.load_checkpoint(tmp_path / train.CHECKPOINT_NAME)["scaler"]["scale"] > 1
    with pytest.raises(CourseValueError, match="amp='fp16'"):
        train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path), "--resume"])   # without --amp
    assert train.main(fp16 + ["--resume"])["step"] == 12


def test_gradient_checkpointing_changes_memory_not_results(tmp_path, translator_task):
    train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path / "plain")])
    train.main(TRANSLATOR_TINY + ["--checkpoint-dir", str(tmp_path / "ckpt"), "--checkpoint-activations"])
    plain, checkpointed = final_weights(tmp_path / "plain"), final_weights(tmp_path / "ckpt")
    assert {name.replace(".layer.", ".") for name in checkpointed} == set(plain)
    for name, weight in checkpointed.items():
        torch.testing.assert_close(weight, plain[name.replace(".layer.", ".")], atol=1e-6, rtol=0)

    batch = translator_task.train_batches[0]
    torch.manual_seed(0)
    model = translator_task.build_model()
    measured = {"float32": saved_activation_bytes(lambda: translator_task.loss_sum(model, batch), model)}
    with autocast_context(torch.device("cpu"), "bf16"):
        measured["bf16"] = saved_activation_bytes(lambda: translator_task.loss_sum(model, batch), model)
    assert checkpoint_layers(model) == 2                        # one encoder and one decoder layer
    measured["checkpointed"] = saved_activation_bytes(lambda: translator_task.loss_sum(model, batch), model)
    assert measured["checkpointed"] < 0.75 * measured["float32"]   # only the layers' inputs are kept
    assert measured["bf16"] < measured["float32"]
    memory = step_memory(lambda: translator_task.loss_sum(model, batch), model)
    assert memory["peak CUDA MB"] is None and memory["saved for backward MB"] > 0   # CPU: no allocator peak


def test_task_losses_equal_the_lessons_definitions(translator_task):
    model = translator_task.build_model()
    src, tgt = translator_task.train_batches[0]
    logits = model(src, tgt[:, :-1])
    lesson = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=0,
                             label_smoothing=0.1)                 # lesson 07's translation_loss
    torch.testing.assert_close(losses.translation_loss(model, (src, tgt)), lesson)

    ids = torch.randint(7, 50, (4, 9))
    mlm_model = tasks.build_task("mlm", "tiny").build_model().eval()
    ids = ids % mlm_model.output.out_features
    inputs, labels = mlm.mask_tokens(ids, mlm_model.output.out_features, torch.Generator().manual_seed(1))
    n_selected = int((labels != mlm.IGNORE_INDEX).sum())
    torch.testing.assert_close(losses.masked_lm_loss_sum(mlm_model, (inputs, labels)) / n_selected,
                               losses.masked_lm_loss(mlm_model(inputs), labels))


def test_token_count_normalisation_is_what_makes_split_batches_equal(translator_task):
    model = translator_task.build_model()
    short, long = translator_task.train_batches[0], translator_task.train_batches[1]
    counts = [translator_task.target_count(b) for b in (short, long)]
    whole = sum(translator_task.loss_sum(model, b) for b in (short, long)) / sum(counts)
    mean_of_means = (translator_task.loss(model, short) + translator_task.loss(model, long)) / 2
    src_len, tgt_len = (max(b[i].size(1) for b in (short, long)) for i in (0, 1))
    src = torch.cat([F.pad(b[0], (0, src_len - b[0].size(1))) for b in (short, long)])   # one batch of both
    tgt = torch.cat([F.pad(b[1], (0, tgt_len - b[1].size(1))) for b in (short, long)])
    torch.testing.assert_close(whole, losses.translation_loss(model, (src, tgt)))
    assert counts[0] != counts[1] and not torch.allclose(mean_of_means, whole)


def test_translator_evaluation_scores_greedy_output_and_names_the_weakest_stress_category(translator_task):
    from course_utils.data.numbers import NumberPair
    from course_utils.tokenization import EOS_ID

    model = translator_task.build_model().eval()
    with torch.no_grad():  # a model that ends every translation at once: greedy decoding writes ""
        model.generator.weight.zero_()
        model.generator.bias.zero_()
        model.generator.bias[EOS_ID] = 10.0
    split = translator_task.extras["split"]
    graded = [NumberPair(p.number, p.english, "" if i % 2 else p.german) for i, p in enumerate(split.test[:6])]
    assert translator_task.exact_match(model, graded) == 50.0
    metrics = translator_task.evaluate(model)
    assert metrics["exact match %"] == 0.0 and metrics["its exact match %"] == 0.0
    assert metrics["lowest stress category"] in split.stress


def test_translator_batches_are_lesson_07s_loader_epoch_by_epoch():
    src, tgt = torch.arange(1, 51)[:, None].repeat(1, 3), torch.arange(1, 51)[:, None].repeat(1, 4)
    loader = make_loader(src, tgt, batch_size=8, seed=3)
    for epoch in range(3):
        expected = list(loader)
        got = tasks.row_batches((src, tgt), batch_size=8, seed=3, epoch=epoch)
        assert len(got) == len(expected)
        assert all(torch.equal(a, b) for pair, other in zip(got, expected) for a, b in zip(pair, other))


def test_the_gpt_command_is_train_lm_on_lesson_08s_data(tmp_path):
    from course_utils.language_model import DecoderOnlyLM
    from course_utils.runtime import seed_everything
    from course_utils.training import train_lm

    metrics = train.main(["gpt", "--size", "tiny", "--threads", "1", "--no-progress", "--seed", "3",
                          "--checkpoint-dir", str(tmp_path)])
    task, recipe = tasks.build_task("gpt", "tiny", seed=3), tasks.recipe_for("gpt", "tiny")
    assert metrics["total_steps"] == recipe.steps and set(metrics) >= {"validation perplexity", "test perplexity"}
    seed_everything(3)
    model = DecoderOnlyLM(task.model_config)
    train_lm(model, task.extras["data"].train[:recipe.max_sentences], **recipe.train_lm_options(), seed=3)
    command = final_weights(tmp_path)
    for name, value in model.state_dict().items():      # same batches, order, schedule, clipping and decay
        torch.testing.assert_close(command[name], value, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # about a minute
def test_the_command_reproduces_lesson_07s_exact_match():
    stored = json.loads((ROOT / "notebooks" / "07_translation.ipynb").read_text(encoding="utf-8"))
    outputs = "".join("".join(o.get("text", "")) for c in stored["cells"] if c["cell_type"] == "code"
                      for o in c["outputs"])
    lesson = float(re.search(r"exact match %:\s+([\d.]+)", outputs).group(1))   # greedy, held-out test set
    metrics = train.main(["translator", "--threads", "1", "--no-progress"])
    assert abs(metrics["exact match %"] - lesson) <= 0.3, (metrics["exact match %"], lesson)


@pytest.mark.slow  # about a minute
def test_the_mlm_command_clears_lesson_06s_bar():
    # lesson 06's recipe as a command: its own batch order and masks, so not the notebook's exact number — but the
    # lesson's claim must hold: accuracy at held-out [MASK] positions above the one-sided bigram of the same ids
    metrics = train.main(["mlm", "--threads", "1", "--no-progress"])
    assert metrics["accuracy at [MASK] %"] > metrics["one-sided bigram at [MASK] %"], metrics
