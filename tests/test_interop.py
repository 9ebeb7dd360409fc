"""The course's blocks run the published families: GPT-2, BERT and Llama weights give ``transformers``' numbers.

For each family, five small random configurations built locally (odd sizes, a few layers, padding through the
attention mask, every GQA ratio down to multi-query): the course's model gives the logits of ``transformers``
(float32, max |difference| ≤ 1e-5 × max |logit|), greedy decoding gives the tokens of ``generate(do_sample=False)``,
converting back gives a ``transformers`` model with identical outputs, and a folder written by ``save_pretrained``
loads. Settings the course does not reproduce are refused with a course error naming them. The course's BPE reads
and writes GPT-2's ``vocab.json`` + ``merges.txt`` with the ids of Hugging Face ``tokenizers``.

Offline: random weights, tokenizers trained here, nothing fetched (the network guard of conftest.py stays on).
"""
from __future__ import annotations

import json
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")          # nothing here may reach the hub, even by accident
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import pytest  # noqa: E402
import torch  # noqa: E402
import transformers  # noqa: E402
from tokenizers import ByteLevelBPETokenizer  # noqa: E402

from course_utils import interop  # noqa: E402
from course_utils.config import TransformerConfig  # noqa: E402
from course_utils.decoding import generate  # noqa: E402
from course_utils.errors import CourseError, CourseTypeError, CourseValueError  # noqa: E402
from course_utils.language_model import DecoderOnlyLM  # noqa: E402
from course_utils.models import MaskedLanguageModel, Seq2SeqTransformer  # noqa: E402
from course_utils.modern import apply_rotary, modern_config  # noqa: E402
from course_utils.tokenization import BPETokenizer  # noqa: E402

transformers.logging.set_verbosity_error()

RELATIVE_TOLERANCE = 1e-5

GPT2 = [  # odd widths and head sizes, each activation, untied head, padding id for the padded batches
    dict(vocab_size=61, n_embd=24, n_layer=2, n_head=3, n_positions=40),
    dict(vocab_size=37, n_embd=18, n_layer=1, n_head=2, n_positions=32, n_inner=50, activation_function="gelu"),
    dict(vocab_size=50, n_embd=16, n_layer=3, n_head=4, n_positions=36, activation_function="relu",
         tie_word_embeddings=False),
    dict(vocab_size=45, n_embd=20, n_layer=2, n_head=5, n_positions=40, activation_function="gelu_pytorch_tanh",
         layer_norm_epsilon=1e-3, pad_token_id=0),
    dict(vocab_size=70, n_embd=12, n_layer=2, n_head=1, n_positions=30, pad_token_id=3),
]
BERT = [
    dict(vocab_size=53, hidden_size=20, num_hidden_layers=2, num_attention_heads=4, intermediate_size=36,
         max_position_embeddings=30),
    dict(vocab_size=41, hidden_size=18, num_hidden_layers=1, num_attention_heads=3, intermediate_size=7,
         max_position_embeddings=24, type_vocab_size=3, pad_token_id=1),
    dict(vocab_size=60, hidden_size=24, num_hidden_layers=3, num_attention_heads=2, intermediate_size=40,
         max_position_embeddings=20, tie_word_embeddings=False),
    dict(vocab_size=47, hidden_size=16, num_hidden_layers=2, num_attention_heads=4, intermediate_size=33,
         max_position_embeddings=26, layer_norm_eps=1e-5),
    dict(vocab_size=33, hidden_size=10, num_hidden_layers=2, num_attention_heads=5, intermediate_size=15,
         max_position_embeddings=18, type_vocab_size=1),
]
LLAMA = [  # GQA 2:1, multi-query, multi-head (tied), 2:1 with 6 heads, multi-query with an odd number of pairs
    dict(vocab_size=57, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
         intermediate_size=44, max_position_embeddings=40),
    dict(vocab_size=43, hidden_size=24, num_hidden_layers=2, num_attention_heads=3, num_key_value_heads=1,
         intermediate_size=30, max_position_embeddings=40, rope_parameters={"rope_type": "default",
                                                                           "rope_theta": 500.0}),
    dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
         intermediate_size=21, max_position_embeddings=36, tie_word_embeddings=True, rms_norm_eps=1e-5),
    dict(vocab_size=64, hidden_size=48, num_hidden_layers=3, num_attention_heads=6, num_key_value_heads=3,
         intermediate_size=20, max_position_embeddings=40),
    dict(vocab_size=39, hidden_size=40, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=1,
         intermediate_size=52, max_position_embeddings=48, pad_token_id=0,
         rope_parameters={"rope_type": "default", "rope_theta": 1e6}),
]
FAMILY = {"gpt2": (transformers.GPT2Config, transformers.GPT2LMHeadModel, GPT2),
          "bert": (transformers.BertConfig, transformers.BertForMaskedLM, BERT),
          "llama": (transformers.LlamaConfig, transformers.LlamaForCausalLM, LLAMA)}
CASES = [(family, i) for family in FAMILY for i in range(5)]
BOS, EOS = 1, 2                          # inside every tiny vocabulary (GPT-2's default 50256 is not)


def randomize(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Weights of order one everywhere, norms' gains and biases included: ``transformers`` initialises the norms to
    (1, 0) and the rest at 0.02, under which a swapped or missing norm would go unnoticed."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator)
            if p.dim() > 1:
                p.copy_(1.5 * noise / p.shape[-1] ** 0.5)
            elif name.endswith("weight"):                    # a norm's gain
                p.copy_(1.0 + 0.3 * noise)
            else:
                p.copy_(0.2 * noise)
    return model.eval()


def published(family: str, index: int) -> torch.nn.Module:
    config_class, model_class, settings = FAMILY[family]
    extra = {} if family == "bert" else {"bos_token_id": BOS, "eos_token_id": EOS}
    torch.manual_seed(index)
    return randomize(model_class(config_class(**settings[index], **extra)), seed=100 * index + len(family))


def batch(model: torch.nn.Module, seed: int, rows: int = 3, seq: int = 11) -> torch.Tensor:
    """Token ids that avoid the padding id (which only stands where the batch pads)."""
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (rows, seq), generator=torch.Generator().manual_seed(seed))
    pad = model.config.pad_token_id
    return ids if pad is None else torch.where(ids == pad, (pad + 1) % vocab, ids)


def assert_same_logits(ours: torch.Tensor, theirs: torch.Tensor, where: str) -> float:
    scale = theirs.abs().max().item()
    difference = (ours - theirs).abs().max().item()
    assert difference <= RELATIVE_TOLERANCE * scale, f"{where}: max |Δ| {difference:.2e} > 1e-5 × {scale:.2f}"
    return difference / scale


@torch.no_grad()
@pytest.mark.parametrize("family, index", CASES)
def test_logits_equal_transformers(family, index):
    theirs = published(family, index)
    ours = interop.from_transformers(theirs)
    ids = batch(theirs, index)
    if family == "bert":
        token_types = torch.randint(0, theirs.config.type_vocab_size, ids.shape)
        assert_same_logits(ours(ids, token_types), theirs(ids, token_type_ids=token_types).logits, family)
    else:
        assert_same_logits(ours(ids), theirs(ids).logits, family)


@torch.no_grad()
@pytest.mark.parametrize("family, index", [c for c in CASES if FAMILY[c[0]][2][c[1]].get("pad_token_id") is not None
                                           or c[0] == "bert"])
def test_padding_through_the_attention_mask(family, index):
    """Rows padded with the config's ``pad_token_id``: the course masks that id, ``transformers`` takes
    ``attention_mask = ids != pad``; the real positions agree (BERT on both sides of the padding, the causal
    families with right and left padding)."""
    theirs = published(family, index)
    ours = interop.from_transformers(theirs)
    pad = theirs.config.pad_token_id
    ids = batch(theirs, index + 7, rows=4, seq=12)
    ids[1, 8:] = pad                                        # right padding
    ids[2, :5] = pad                                        # left padding
    real = ids != pad
    reference = theirs(ids, attention_mask=real.long()).logits
    assert_same_logits(ours(ids)[real], reference[real], f"{family} padded")


@torch.no_grad()
@pytest.mark.parametrize("family, index", [c for c in CASES if c[0] != "bert"])
def test_greedy_generation_equals_transformers_generate(family, index):
    theirs = published(family, index)
    ours = interop.from_transformers(theirs)
    prompt = batch(theirs, index + 3, rows=2, seq=5)
    prompt = torch.where(prompt == EOS, EOS + 1, prompt)
    pad = theirs.config.pad_token_id
    expected = theirs.generate(prompt, attention_mask=torch.ones_like(prompt), do_sample=False, max_new_tokens=20,
                               eos_token_id=EOS, pad_token_id=EOS if pad is None else pad)
    got = generate(ours, prompt, 20, temperature=0.0, eos_id=EOS, forbidden_ids=())
    assert torch.equal(got, expected), f"{family} {index}:\n{got}\n{expected}"


@torch.no_grad()
@pytest.mark.parametrize("family, index", CASES)
def test_converting_back_gives_the_same_transformers_model(family, index):
    theirs = published(family, index)
    back = interop.to_transformers(interop.from_transformers(theirs))
    assert type(back) is type(theirs)
    ids = batch(theirs, index + 11)
    assert torch.equal(back(ids).logits, theirs(ids).logits)
    assert back.config.tie_word_embeddings == theirs.config.tie_word_embeddings


@torch.no_grad()
@pytest.mark.parametrize("family", list(FAMILY))
def test_save_pretrained_folders_load(family, tmp_path):
    theirs = published(family, 0)
    theirs.save_pretrained(tmp_path / "published")           # safetensors, as the hub serves them
    assert (tmp_path / "published" / "model.safetensors").is_file()
    ids = batch(theirs, 5)
    loaded = interop.load_checkpoint(tmp_path / "published")
    assert_same_logits(loaded(ids), theirs(ids).logits, f"{family} from a folder")
    assert torch.equal(loaded(ids), interop.from_transformers(theirs)(ids))
    interop.to_transformers(loaded).save_pretrained(tmp_path / "ours")
    assert torch.equal(interop.load_checkpoint(tmp_path / "ours")(ids), loaded(ids))
    again = getattr(transformers, type(theirs).__name__).from_pretrained(tmp_path / "ours")  # a local folder
    assert torch.equal(again.eval()(ids).logits, theirs(ids).logits)


def test_the_converted_config_names_each_family_switch():
    gpt2 = interop.from_transformers(published("gpt2", 0)).config
    assert type(gpt2) is interop.PublishedConfig
    assert (gpt2.norm, gpt2.positional, gpt2.activation, gpt2.scale_embeddings, gpt2.pad_id) == \
        ("pre", "learned", "gelu_tanh", False, None)
    bert = interop.from_transformers(published("bert", 0)).text_encoder.config
    assert (bert.norm, bert.embedding_norm, bert.final_norm, bert.norm_eps, bert.n_token_types) == \
        ("post", True, False, 1e-12, 2)
    llama = interop.from_transformers(published("llama", 1)).config
    assert (llama.positional, llama.normalization, llama.activation, llama.n_kv_heads, llama.bias, llama.rope_base,
            llama.norm_eps) == ("rope", "rmsnorm", "swiglu", 1, False, 500.0, 1e-6)


# ---------------------------------------------------------------------------- what the converters refuse
REFUSED = [
    ("gpt2", {"scale_attn_by_inverse_layer_idx": True}, "scale_attn_by_inverse_layer_idx"),
    ("gpt2", {"reorder_and_upcast_attn": True}, "reorder_and_upcast_attn"),
    ("gpt2", {"scale_attn_weights": False}, "scale_attn_weights"),
    ("gpt2", {"add_cross_attention": True}, "add_cross_attention"),
    ("gpt2", {"activation_function": "silu"}, "activation_function"),
    ("bert", {"position_embedding_type": "relative_key"}, "position_embedding_type"),
    ("bert", {"is_decoder": True}, "is_decoder"),
    ("bert", {"add_cross_attention": True}, "add_cross_attention"),
    ("bert", {"hidden_act": "gelu_new"}, "hidden_act"),
    ("llama", {"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, "rope_scaling"),
    ("llama", {"rope_parameters": {"rope_type": "llama3", "rope_theta": 5e5, "factor": 8.0}}, "rope_parameters"),
    ("llama", {"attention_bias": True}, "attention_bias"),
    ("llama", {"mlp_bias": True}, "mlp_bias"),
    ("llama", {"hidden_act": "gelu"}, "hidden_act"),
    ("llama", {"head_dim": 16}, "head_dim"),
    ("llama", {"model_type": "mistral"}, "model_type"),
    ("gpt2", {"architectures": ["GPT2ForSequenceClassification"]}, "GPT2LMHeadModel"),
    ("gpt2", {"is_causal": False}, "is_causal"),           # converted silently, logits were off by 16
    ("llama", {"is_causal": False}, "is_causal"),
    ("bert", {"is_causal": True}, "is_causal"),
    ("llama", {"rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 4.0,
                                "high_freq_factor": 1.0, "original_max_position_embeddings": 16}}, "rope_scaling"),
]


@pytest.mark.parametrize("family, change, option", REFUSED, ids=[f"{f}-{o}" for f, _, o in REFUSED])
def test_unsupported_settings_are_refused_by_name(family, change, option):
    theirs = published(family, 0)
    with pytest.raises(CourseValueError, match=option):
        interop.from_hf({**theirs.config.to_dict(), **change}, theirs.state_dict())


def test_missing_and_unexpected_weights_are_refused():
    theirs = published("gpt2", 2)                           # untied: its head is a weight of its own
    state = theirs.state_dict()
    config = theirs.config.to_dict()
    with pytest.raises(CourseValueError, match="lm_head.weight"):
        interop.from_hf(config, {k: v for k, v in state.items() if k != "lm_head.weight"})
    with pytest.raises(CourseValueError, match="score.weight"):
        interop.from_hf(config, {**state, "score.weight": torch.zeros(2, 16)})
    with pytest.raises(CourseValueError, match="do not fit"):
        interop.from_hf({**config, "n_inner": 70}, state)
    with pytest.raises(CourseTypeError):
        interop.from_hf("gpt2", state)
    with pytest.raises(CourseTypeError):
        interop.from_transformers(torch.nn.Linear(2, 2))


def test_gpt2_weights_of_the_wrong_shape_are_refused_by_name():
    theirs = published("gpt2", 0)                           # n_embd 24
    state, config = theirs.state_dict(), theirs.config.to_dict()
    wider = {**state, "transformer.h.0.attn.c_attn.weight": torch.zeros(24, 75)}
    with pytest.raises(CourseValueError, match="c_attn"):
        interop.from_hf(config, wider)
    wider_bias = {**state, "transformer.h.0.attn.c_attn.bias": torch.zeros(75)}
    with pytest.raises(CourseValueError, match="c_attn"):
        interop.from_hf(config, wider_bias)
    three_d = {**state, "transformer.h.1.mlp.c_proj.weight": state["transformer.h.1.mlp.c_proj.weight"][None]}
    with pytest.raises(CourseValueError, match="c_proj"):
        interop.from_hf(config, three_d)


LLAMA3 = [  # (settings, rope_scaling): sizes and every regime of the scaling (slowed, kept, blended)
    (dict(hidden_size=32, num_attention_heads=4, num_key_value_heads=2),
     dict(factor=8.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=16)),
    (dict(hidden_size=48, num_attention_heads=3, num_key_value_heads=1, rope_theta=500000.0),
     dict(factor=32.0, low_freq_factor=1.0, high_freq_factor=4.0, original_max_position_embeddings=64)),
    (dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=4),
     dict(factor=2.0, low_freq_factor=0.5, high_freq_factor=2.0, original_max_position_embeddings=8)),
    (dict(hidden_size=24, num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True),
     dict(factor=4.0, low_freq_factor=2.0, high_freq_factor=8.0, original_max_position_embeddings=32)),
]


@torch.no_grad()
@pytest.mark.parametrize("index", range(len(LLAMA3)))
def test_llama3_rope_scaling_equals_transformers(index):
    settings, scaling = LLAMA3[index]
    theta = settings.pop("rope_theta", 10000.0) if "rope_theta" in settings else 10000.0
    config = transformers.LlamaConfig(vocab_size=47, num_hidden_layers=2, intermediate_size=36,
                                      max_position_embeddings=256, **{k: v for k, v in settings.items()},
                                      rope_parameters={"rope_type": "llama3", "rope_theta": theta, **scaling})
    settings["rope_theta"] = theta
    torch.manual_seed(index)
    theirs = randomize(transformers.LlamaForCausalLM(config), seed=index)
    ids = batch(theirs, index, rows=2, seq=90)              # far past original_max_position_embeddings
    ours = interop.from_transformers(theirs)
    assert_same_logits(ours(ids), theirs(ids).logits, f"llama3 case {index}")
    plain = interop.from_hf({**config.to_dict(), "rope_parameters": {"rope_type": "default", "rope_theta": theta}},
                            theirs.state_dict())
    assert (plain(ids) - theirs(ids).logits).abs().max() > 1e-2   # the scaling matters at these lengths
    back = interop.to_transformers(ours)
    assert back.config.rope_parameters["rope_type"] == "llama3"
    assert_same_logits(back(ids).logits, theirs(ids).logits, f"llama3 case {index}, converted back")
    on_disk = {**config.to_dict(), "rope_scaling": {"rope_type": "llama3", **scaling}, "rope_theta": theta}
    on_disk.pop("rope_parameters")                          # a Llama 3.x config.json names it rope_scaling
    assert_same_logits(interop.from_hf(on_disk, theirs.state_dict())(ids), theirs(ids).logits, "rope_scaling")


def test_damaged_checkpoint_files_are_named(tmp_path):
    theirs = published("gpt2", 0)
    theirs.save_pretrained(tmp_path / "good")
    interop.load_checkpoint(tmp_path / "good")
    bad = tmp_path / "bad_config"
    bad.mkdir()
    (bad / "config.json").write_text('{"model_type": "gpt2", ')
    (bad / "model.safetensors").write_bytes((tmp_path / "good" / "model.safetensors").read_bytes())
    with pytest.raises(CourseValueError, match="config.json"):
        interop.load_checkpoint(bad)
    truncated = tmp_path / "bad_weights"
    truncated.mkdir()
    (truncated / "config.json").write_text((tmp_path / "good" / "config.json").read_text())
    (truncated / "model.safetensors").write_bytes((tmp_path / "good" / "model.safetensors").read_bytes()[:200])
    with pytest.raises(CourseValueError, match="model.safetensors"):
        interop.load_checkpoint(truncated)
    sharded = tmp_path / "sharded"
    sharded.mkdir()
    (sharded / "config.json").write_text((tmp_path / "good" / "config.json").read_text())
    (sharded / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"transformer.wte.weight": "model-00001-of-00002.safetensors",
                        "lm_head.weight": "model-00002-of-00002.safetensors"}}))
    (sharded / "model-00001-of-00002.safetensors").write_bytes(
        (tmp_path / "good" / "model.safetensors").read_bytes())
    with pytest.raises(CourseValueError, match="model-00002-of-00002.safetensors"):
        interop.load_checkpoint(sharded)


def test_load_checkpoint_needs_a_checkpoint_folder(tmp_path):
    with pytest.raises(CourseValueError, match="config.json"):
        interop.load_checkpoint(tmp_path)
    (tmp_path / "config.json").write_text('{"model_type": "gpt2"}')
    with pytest.raises(CourseValueError, match="safetensors"):
        interop.load_checkpoint(tmp_path)


@pytest.mark.parametrize("make, option", [
    (lambda: DecoderOnlyLM(TransformerConfig(40, 16, 2, 32, 1, 16, norm="pre", positional="learned")),
     "scale_embeddings"),                                   # lesson 08's GPT scales its embeddings, GPT-2 does not
    (lambda: DecoderOnlyLM(modern_config(40, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=16)),
     "scale_embeddings"),
    (lambda: DecoderOnlyLM(interop.PublishedConfig(40, 16, 2, 32, 1, 16, norm="post", positional="learned",
                                                     scale_embeddings=False)), "norm"),
    (lambda: MaskedLanguageModel(interop.PublishedConfig(40, 16, 2, 32, 1, 16, norm="pre", positional="learned",
                                                           scale_embeddings=False)), "norm"),
    (lambda: MaskedLanguageModel(interop.PublishedConfig(40, 16, 2, 32, 1, 16, positional="learned",
                                                           scale_embeddings=False, embedding_norm=True,
                                                           final_norm=False)),
     "activation"),
    (lambda: DecoderOnlyLM(interop.PublishedConfig(40, 16, 2, 32, 1, 16, norm="pre", positional="learned",
                                                     scale_embeddings=False, activation="swiglu")), "activation"),
])
def test_course_models_the_family_cannot_hold_are_refused_by_name(make, option):
    with pytest.raises(CourseValueError, match=option):
        interop.to_hf(make())


def test_only_language_models_convert_back():
    with pytest.raises(CourseTypeError, match="DecoderOnlyLM"):
        interop.to_hf(Seq2SeqTransformer(TransformerConfig(40, 16, 2, 32, 1, 16)))


# ---------------------------------------------------------------------------- RoPE's pairing
def rotate_interleaved(x: torch.Tensor, base: float) -> torch.Tensor:
    """Meta's original RoPE: pairs (2j, 2j+1), as complex numbers turned by position · θ_j."""
    seq, d_head = x.size(-2), x.size(-1)
    theta = base ** (-torch.arange(0, d_head, 2, dtype=torch.float32) / d_head)
    turn = torch.polar(torch.ones(seq, d_head // 2), torch.arange(seq)[:, None].float() * theta)
    pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], d_head // 2, 2))
    return torch.view_as_real(pairs * turn).flatten(-2)


def test_rope_pairings_agree_after_permuting_the_rows():
    d_model, n_heads, seq, base = 24, 2, 9, 10000.0
    d_head = d_model // n_heads
    generator = torch.Generator().manual_seed(0)
    w_q, w_k = torch.randn(2, d_model, d_model, generator=generator)
    x = torch.randn(1, seq, d_model, generator=generator)

    def heads(t):
        return t.view(1, seq, n_heads, d_head).transpose(1, 2)

    meta_q, meta_k = (rotate_interleaved(heads(x @ w.t()), base) for w in (w_q, w_k))
    q, k = apply_rotary(heads(x @ interop.interleaved_to_halves(w_q, n_heads).t()),
                        heads(x @ interop.interleaved_to_halves(w_k, n_heads).t()), torch.arange(seq), base)
    torch.testing.assert_close(q @ k.transpose(-2, -1), meta_q @ meta_k.transpose(-2, -1), atol=1e-4, rtol=1e-5)
    unpermuted_q, unpermuted_k = apply_rotary(heads(x @ w_q.t()), heads(x @ w_k.t()), torch.arange(seq), base)
    assert not torch.allclose(unpermuted_q @ unpermuted_k.transpose(-2, -1), meta_q @ meta_k.transpose(-2, -1),
                              atol=1e-2)
    assert torch.equal(interop.halves_to_interleaved(interop.interleaved_to_halves(w_q, n_heads), n_heads), w_q)
    bias = torch.arange(d_model, dtype=torch.float32)
    assert interop.interleaved_to_halves(bias, n_heads)[:d_head].tolist() == [*range(0, d_head, 2),
                                                                              *range(1, d_head, 2)]
    with pytest.raises(CourseError, match="even d_head"):
        interop.interleaved_to_halves(torch.zeros(10, 4), 2)


# ---------------------------------------------------------------------------- GPT-2's tokenizer files
CORPUS = ["The quick brown fox jumps over the lazy dog.", "Über naïve café — déjà vu!",
          "def f(x):\n    return x  # a tab:\there", "日本語のテキストと中文の文", "emoji 🙂🙃 and   spaces  ",
          "numbers 12345, ½ ² ① and 3.14", "it's we're they'll I'd you've", "line one\nline two\r\n\n"] * 15
TEXTS = ["The lazy café 🙂 jumps\n\n  over 日本語 ½", "  leading spaces", "trailing newline\n", "",
         "it's\t\ttabs and CRLF\r\n", "ÿ\x00\x1f control bytes", "[PAD] looks special but is text",
         "Ünïcödé wörds the quick fox", "unseen: Ωμέγα кириллица ✓"]


def test_bpe_reads_a_tokenizer_trained_by_hugging_face(tmp_path):
    theirs = ByteLevelBPETokenizer()
    theirs.train_from_iterator(CORPUS, vocab_size=400, min_frequency=2, special_tokens=["<|endoftext|>"],
                               show_progress=False)
    theirs.save_model(str(tmp_path))
    ours = BPETokenizer.read_vocab_and_merges(tmp_path)
    assert ours.vocab_size == theirs.get_vocab_size()
    for text in TEXTS:
        ids = ours.encode(text)
        assert ids == theirs.encode(text).ids, text
        assert ours.decode(ids) == theirs.decode(ids) == text
    assert ours.encode("<|endoftext|>the", recognize_special_tokens=True) == theirs.encode("<|endoftext|>the").ids
    assert ours.decode(theirs.encode("<|endoftext|>the").ids, skip_special_tokens=False) == "<|endoftext|>the"
    (tmp_path / "again").mkdir()
    ours.write_vocab_and_merges(tmp_path / "again")                # the file's own numbering is written back
    assert json.loads((tmp_path / "again" / "vocab.json").read_text(encoding="utf-8")) == theirs.get_vocab()
    assert BPETokenizer.read_vocab_and_merges(tmp_path / "again").encode(TEXTS[0]) == ours.encode(TEXTS[0])


def test_bpe_written_files_load_in_hugging_face(tmp_path):
    ours = BPETokenizer.train(CORPUS, vocab_size=420)
    vocab, merges = ours.write_vocab_and_merges(tmp_path)
    theirs = ByteLevelBPETokenizer(str(vocab), str(merges))
    for text in TEXTS:
        assert ours.encode(text) == theirs.encode(text).ids, text
        assert theirs.decode(ours.encode(text)) == text
    again = BPETokenizer.read_vocab_and_merges(tmp_path)
    assert again.merges == ours.merges and again.vocab_size == ours.vocab_size
    again.save(tmp_path / "tokenizer.json")                   # the course's own layout: its own format works too


def test_bpe_file_errors_name_the_fix(tmp_path):
    with pytest.raises(CourseValueError, match="vocab.json"):
        BPETokenizer.read_vocab_and_merges(tmp_path)
    (tmp_path / "vocab.json").write_text('{"a": 0}', encoding="utf-8")
    (tmp_path / "merges.txt").write_text("#version: 0.2\nq z\n", encoding="utf-8")
    with pytest.raises(CourseValueError, match="do not belong together"):
        BPETokenizer.read_vocab_and_merges(tmp_path)
    (tmp_path / "merges.txt").write_text("#version: 0.2\nqz zq\n", encoding="utf-8")
    with pytest.raises(CourseValueError, match="line 2"):
        BPETokenizer.read_vocab_and_merges(tmp_path)
    with pytest.raises(CourseValueError, match="not a folder"):
        BPETokenizer.train(["a b"], 263).write_vocab_and_merges(tmp_path / "missing")


@torch.no_grad()
def test_bert_checkpoints_with_gamma_and_beta_names_load():
    theirs = published("bert", 0)
    renamed = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
               for k, v in theirs.state_dict().items()}
    assert any(k.endswith("gamma") for k in renamed)
    ids = batch(theirs, 2)
    assert torch.equal(interop.from_hf(theirs.config.to_dict(), renamed)(ids), interop.from_transformers(theirs)(ids))
