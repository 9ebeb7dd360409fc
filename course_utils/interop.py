"""Published model families in the course's blocks: GPT-2, BERT and Llama weights, loaded and given back (lesson 09).

The course's blocks are the blocks of the models people publish. This module moves the weights of three families
into the course's models, and back:

===========  ===============================  ==========================================================
family       Hugging Face class               course model (config switches set by the converter)
===========  ===============================  ==========================================================
``gpt2``     ``GPT2LMHeadModel``              :class:`~course_utils.language_model.DecoderOnlyLM`: Pre-LN,
                                              learned positions, ``activation="gelu_tanh"``, tied head
``bert``     ``BertForMaskedLM``              :class:`~course_utils.models.MaskedLanguageModel`: Post-LN,
                                              learned positions, ``n_token_types``, ``embedding_norm``,
                                              no final norm, ``norm_eps=1e-12``
``llama``    ``LlamaForCausalLM``             :class:`~course_utils.language_model.DecoderOnlyLM`: lesson
                                              09's block (RoPE, RMSNorm, SwiGLU, ``n_kv_heads``, no biases)
===========  ===============================  ==========================================================

The converters build a :class:`PublishedConfig`: a :class:`~course_utils.config.TransformerConfig` with the five
settings only published checkpoints need (every course model has their defaults). None of the three families scales
its token embeddings by √d_model, so every converted config has ``scale_embeddings=False``. The three conventions
that trip people:

* **GPT-2's ``Conv1D``** stores its matrices as ``(in, out)`` — the transpose of ``nn.Linear``'s ``(out, in)`` — and
  fuses W_q, W_k, W_v into one ``c_attn`` of width ``3 · d_model``: transpose, then cut in three.
* **RoPE's pairing**: the course (like Hugging Face's Llama) rotates dimension ``j`` with ``j + d_head/2``
  (:func:`~course_utils.modern.rotate_half`); Meta's original Llama code rotates neighbours ``(2j, 2j+1)``.
  Both are the same model once the rows of W_q and W_k are permuted inside each head
  (:func:`interleaved_to_halves`); Hugging Face's Llama checkpoints are already in the half layout, so their rows
  are copied as they are.
* **BERT is Post-LN**: the norm comes *after* each residual addition (``norm="post"``), the embeddings are
  normalised too, and there is no final norm.

A converter refuses, with a course error naming the option, any setting it does not reproduce exactly (RoPE
scaling, attention biases in Llama, another activation, GPT-2's ``scale_attn_by_inverse_layer_idx``, cross-attention,
relative position embeddings, …) instead of loading something subtly different.

Nothing here needs the internet: :func:`load_checkpoint` reads a folder (``config.json`` + ``model.safetensors``)
with ``safetensors``; :func:`from_transformers` takes a model already in memory; :func:`to_transformers` builds a
``transformers`` model from the course's (with ``HF_HUB_OFFLINE=1`` unless you set it otherwise).
"""
from __future__ import annotations

__all__ = ["FAMILIES", "PublishedConfig", "from_hf", "from_transformers", "halves_to_interleaved",
           "interleaved_to_halves", "load_checkpoint", "to_hf", "to_transformers"]

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn as nn

from .config import TransformerConfig
from .errors import CourseTypeError, CourseValueError
from .language_model import DecoderOnlyLM
from .models import MaskedLanguageModel
from .validation import check_bool, check_non_negative_int, check_positive_int, check_real, describe

FAMILIES = ("gpt2", "bert", "llama")
"""The model families the converters know (Hugging Face's ``model_type``)."""

_CLASSES = {"gpt2": "GPT2LMHeadModel", "bert": "BertForMaskedLM", "llama": "LlamaForCausalLM"}
_GPT2_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu", "relu": "relu"}
# weights a checkpoint may hold that the course's model has no use for (buffers, heads of other tasks)
_IGNORED = re.compile(r"(^|\.)(attn\.bias|attn\.masked_bias|rotary_emb\.inv_freq|position_ids)$"
                      r"|^(bert\.)?pooler\.|^cls\.seq_relationship\.")


# ---------------------------------------------------------------------------- the published families' settings
@dataclass
class PublishedConfig(TransformerConfig):
    """A :class:`~course_utils.config.TransformerConfig` with the settings the published families need to load their
    checkpoints, each at the course's value by default (so ``PublishedConfig(...)`` builds the same model as
    ``TransformerConfig(...)``):

    * ``scale_embeddings=False``: token embeddings are *not* multiplied by √d_model (GPT-2, BERT, Llama);
    * ``n_token_types``: that many token-type (segment) embeddings are added to the input (BERT's sentence A/B;
      0 = none);
    * ``embedding_norm=True``: the summed input embeddings are normalised before the first layer (BERT);
    * ``final_norm=False``: no normalisation after the last layer (BERT's Post-LN encoder has none);
    * ``norm_eps``: the ε of every LayerNorm / RMSNorm (``None``: PyTorch's defaults, 1e-5 for LayerNorm and the
      machine epsilon for RMSNorm; BERT uses 1e-12, Llama 1e-6).

    Checked when built, as every field of the config: ``n_token_types`` a non-negative int, ``norm_eps`` ``None`` or
    positive, the others bools.
    """

    scale_embeddings: bool = True
    n_token_types: int = 0
    embedding_norm: bool = False
    final_norm: bool = True
    norm_eps: float | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("scale_embeddings", "embedding_norm", "final_norm"):
            check_bool(name, getattr(self, name))
        check_non_negative_int("n_token_types", self.n_token_types, hint="; 0 = no token-type embeddings, 2 in BERT")
        if self.norm_eps is not None:
            check_real("norm_eps", self.norm_eps, low=0.0, low_inclusive=False,
                       hint="; None = PyTorch's default, 1e-5 for GPT-2, 1e-12 for BERT, 1e-6 for Llama")


# ---------------------------------------------------------------------------- RoPE's two pairings
def _check_rope_rows(weight: object, n_heads: object) -> int:
    n_heads = check_positive_int("n_heads", n_heads)
    if not isinstance(weight, torch.Tensor) or weight.dim() not in (1, 2) or not weight.is_floating_point():
        raise CourseTypeError(f"weight must be a q or k projection, a float tensor (heads · d_head, d_model) or its "
                              f"bias (heads · d_head,), got {describe(weight)}")
    rows = weight.size(0)
    if rows == 0 or rows % n_heads or (rows // n_heads) % 2:
        raise CourseValueError(f"weight has {rows} rows, which does not split into n_heads={n_heads} heads of an "
                               "even d_head; pass the q (n_heads) or k (n_kv_heads) projection with its head count")
    return n_heads


def interleaved_to_halves(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """Permute the rows of a query/key projection from RoPE's interleaved pairing to the half pairing.

    Interleaved (Meta's original Llama code): dimension ``2j`` turns with ``2j + 1``. Halves (the course's
    :func:`~course_utils.modern.rotate_half`, Hugging Face's Llama): dimension ``j`` turns with ``j + d_head/2``.
    Inside each head, output row ``2j`` moves to ``j`` and row ``2j + 1`` to ``j + d_head/2`` — then every pair the
    interleaved model rotated is a pair the half model rotates, at the same speed, and the attention scores are equal.

    Args:
        weight: ``(n_heads · d_head, d_model)`` rows of W_q or W_k (or a bias ``(n_heads · d_head,)``), float.
        n_heads: the heads these rows belong to (``n_kv_heads`` for W_k under grouped-query attention).

    Returns:
        The permuted copy, same shape and dtype. :func:`halves_to_interleaved` undoes it.
    """
    n_heads = _check_rope_rows(weight, n_heads)
    rows = weight.size(0)
    return weight.reshape(n_heads, rows // n_heads // 2, 2, -1).transpose(1, 2).reshape(weight.shape)


def halves_to_interleaved(weight: torch.Tensor, n_heads: int) -> torch.Tensor:
    """The inverse of :func:`interleaved_to_halves`: rows ``j`` and ``j + d_head/2`` of each head become ``2j`` and
    ``2j + 1``. Same arguments and shapes."""
    n_heads = _check_rope_rows(weight, n_heads)
    rows = weight.size(0)
    return weight.reshape(n_heads, 2, rows // n_heads // 2, -1).transpose(1, 2).reshape(weight.shape)


# ---------------------------------------------------------------------------- reading a published config
_CAUSAL = {"gpt2": True, "bert": False, "llama": True}


def _check_hf_config(hf_config: object) -> tuple[str, dict]:
    """``(family, config)`` of a Hugging Face config dict (``model.config.to_dict()`` or a ``config.json``)."""
    if not isinstance(hf_config, Mapping):
        raise CourseTypeError(f"hf_config must be a dict of settings (config.json, or model.config.to_dict()), got "
                              f"{describe(hf_config)}")
    hf_config = dict(hf_config)
    family = hf_config.get("model_type")
    if family not in FAMILIES:
        raise CourseValueError(f"model_type={family!r} is not one of the families the course can load {FAMILIES}; "
                               "the config must come from a GPT-2, BERT or Llama checkpoint")
    for name in ("architectures",):
        classes = hf_config.get(name) or []
        if classes and _CLASSES[family] not in classes and not any(c.endswith("Model") for c in classes):
            raise CourseValueError(f"architectures={classes}: the course loads {_CLASSES[family]} (the language-model "
                                   f"head of {family}); a checkpoint of another head cannot be reproduced")
    if "is_causal" in hf_config and hf_config["is_causal"] is not None \
            and hf_config["is_causal"] != _CAUSAL[family]:
        _refuse(family, "is_causal", hf_config["is_causal"], f"{family} is "
                f"{'causal' if _CAUSAL[family] else 'bidirectional'}: is_causal={_CAUSAL[family]}")
    return family, hf_config


def _refuse(family: str, option: str, value: object, supported: str) -> None:
    raise CourseValueError(f"this {family} checkpoint sets {option}={value!r}, which the course's model does not "
                           f"reproduce ({supported}); loading it anyway would give different numbers")


def _require(family: str, hf_config: dict, option: str, allowed: tuple, default: object) -> None:
    value = hf_config.get(option, default)
    if value not in allowed:
        _refuse(family, option, value, "supported: " + " or ".join(repr(a) for a in allowed))


def _gpt2_config(c: dict) -> tuple[PublishedConfig, bool]:
    for option, allowed, default in (("scale_attn_weights", (True,), True),
                                     ("scale_attn_by_inverse_layer_idx", (False,), False),
                                     ("reorder_and_upcast_attn", (False,), False),
                                     ("add_cross_attention", (False,), False),
                                     ("activation_function", tuple(_GPT2_ACTIVATIONS), "gelu_new")):
        _require("gpt2", c, option, allowed, default)
    d_model = c.get("n_embd", 768)
    config = PublishedConfig(
        vocab_size=c.get("vocab_size", 50257), d_model=d_model, n_heads=c.get("n_head", 12),
        d_ff=c.get("n_inner") or 4 * d_model, n_layers=c.get("n_layer", 12), max_len=c.get("n_positions", 1024),
        dropout=c.get("resid_pdrop", 0.1), activation=_GPT2_ACTIVATIONS[c.get("activation_function", "gelu_new")],
        norm="pre", positional="learned", pad_id=c.get("pad_token_id"), scale_embeddings=False,
        norm_eps=c.get("layer_norm_epsilon", 1e-5))
    return config, c.get("tie_word_embeddings", True)


def _bert_config(c: dict) -> tuple[PublishedConfig, bool]:
    for option, allowed, default in (("hidden_act", ("gelu",), "gelu"),
                                     ("position_embedding_type", ("absolute",), "absolute"),
                                     ("is_decoder", (False,), False),
                                     ("add_cross_attention", (False,), False)):
        _require("bert", c, option, allowed, default)
    if c.get("type_vocab_size", 2) < 1:
        _refuse("bert", "type_vocab_size", c.get("type_vocab_size"), "BERT needs at least one token type")
    config = PublishedConfig(
        vocab_size=c.get("vocab_size", 30522), d_model=c.get("hidden_size", 768),
        n_heads=c.get("num_attention_heads", 12), d_ff=c.get("intermediate_size", 3072),
        n_layers=c.get("num_hidden_layers", 12), max_len=c.get("max_position_embeddings", 512),
        dropout=c.get("hidden_dropout_prob", 0.1), activation="gelu", norm="post", positional="learned",
        pad_id=c.get("pad_token_id", 0), scale_embeddings=False, n_token_types=c.get("type_vocab_size", 2),
        embedding_norm=True, final_norm=False, norm_eps=c.get("layer_norm_eps", 1e-12))
    return config, c.get("tie_word_embeddings", True)


def _rope_settings(c: dict) -> dict:
    """Llama's RoPE settings, from ``rope_scaling`` + ``rope_theta`` (``config.json`` of Llama 3.x) or
    ``rope_parameters`` (transformers 5); refused unless the original RoPE or Llama 3's scaling."""
    option = "rope_scaling" if c.get("rope_scaling") else "rope_parameters"
    rope = dict(c.get(option) or {})
    kind = rope.get("rope_type", rope.get("type", "default"))
    if kind not in ("default", "llama3"):
        _refuse("llama", option, rope, "only the original RoPE, rope_type='default', or Llama 3's 'llama3'")
    if kind == "llama3":
        from .modern import LLAMA3_KEYS
        values = {key: rope.get(key) for key in LLAMA3_KEYS}
        if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0 for v in values.values()) \
                or values["high_freq_factor"] <= values["low_freq_factor"]:
            _refuse("llama", option, rope, "rope_type='llama3' needs positive factor, low_freq_factor < "
                    "high_freq_factor and original_max_position_embeddings")
        if rope.get("partial_rotary_factor", 1.0) != 1.0:
            _refuse("llama", "partial_rotary_factor", rope["partial_rotary_factor"], "every dimension rotated, 1.0")
    return {"kind": kind, "theta": rope.get("rope_theta", c.get("rope_theta", 10000.0)), "parameters": rope}


def _llama_config(c: dict) -> tuple[PublishedConfig, bool]:
    for option, allowed, default in (("hidden_act", ("silu",), "silu"), ("attention_bias", (False,), False),
                                      ("mlp_bias", (False,), False)):
        _require("llama", c, option, allowed, default)
    rope = _rope_settings(c)
    d_model, n_heads = c.get("hidden_size", 4096), c.get("num_attention_heads", 32)
    if c.get("head_dim") not in (None, d_model // n_heads):
        _refuse("llama", "head_dim", c.get("head_dim"), f"the course's heads have hidden_size // num_attention_heads "
                f"= {d_model // n_heads} dimensions")
    config = PublishedConfig(
        vocab_size=c.get("vocab_size", 32000), d_model=d_model, n_heads=n_heads,
        d_ff=c.get("intermediate_size", 11008), n_layers=c.get("num_hidden_layers", 32),
        max_len=c.get("max_position_embeddings", 2048), dropout=c.get("attention_dropout", 0.0),
        activation="swiglu", norm="pre", positional="rope", pad_id=c.get("pad_token_id"), normalization="rmsnorm",
        n_kv_heads=c.get("num_key_value_heads") or n_heads, rope_base=rope["theta"], bias=False,
        scale_embeddings=False, norm_eps=c.get("rms_norm_eps", 1e-6))
    return config, c.get("tie_word_embeddings", False)


_CONFIGS = {"gpt2": _gpt2_config, "bert": _bert_config, "llama": _llama_config}


# ---------------------------------------------------------------------------- weight names, both ways
def _gpt2_names(config: TransformerConfig, prefix: str) -> dict[str, tuple[str, str]]:
    """course name → (published name, how: "copy" / "t" (transpose) / "q", "k", "v" (a third of c_attn, transposed))."""
    names = {"embedding.tokens.lookup.weight": (f"{prefix}wte.weight", "copy"),
             "embedding.positions.table.weight": (f"{prefix}wpe.weight", "copy"),
             "norm.weight": (f"{prefix}ln_f.weight", "copy"), "norm.bias": (f"{prefix}ln_f.bias", "copy")}
    for i in range(config.n_layers):
        ours, theirs = f"blocks.{i}.", f"{prefix}h.{i}."
        for part in ("weight", "bias"):
            names[f"{ours}attn_block.norm.{part}"] = (f"{theirs}ln_1.{part}", "copy")
            names[f"{ours}ff_block.norm.{part}"] = (f"{theirs}ln_2.{part}", "copy")
            how = "t" if part == "weight" else "copy"
            for w in "qkv":
                names[f"{ours}self_attn.w_{w}.{part}"] = (f"{theirs}attn.c_attn.{part}", w)
            names[f"{ours}self_attn.w_o.{part}"] = (f"{theirs}attn.c_proj.{part}", how)
            names[f"{ours}feed_forward.linear1.{part}"] = (f"{theirs}mlp.c_fc.{part}", how)
            names[f"{ours}feed_forward.linear2.{part}"] = (f"{theirs}mlp.c_proj.{part}", how)
    return names


def _bert_names(config: TransformerConfig, prefix: str) -> dict[str, tuple[str, str]]:
    ours, theirs = "text_encoder.embedding.", f"{prefix}embeddings."
    names = {f"{ours}tokens.lookup.weight": (f"{theirs}word_embeddings.weight", "copy"),
             f"{ours}positions.table.weight": (f"{theirs}position_embeddings.weight", "copy"),
             f"{ours}token_types.weight": (f"{theirs}token_type_embeddings.weight", "copy"),
             "output.bias": ("cls.predictions.decoder.bias", "copy")}
    pairs = {f"{ours}norm": f"{theirs}LayerNorm", "transform": "cls.predictions.transform.dense",
             "transform_norm": "cls.predictions.transform.LayerNorm"}
    for i in range(config.n_layers):
        ours, theirs = f"text_encoder.encoder.layers.{i}.", f"{prefix}encoder.layer.{i}."
        pairs.update({f"{ours}self_attn.w_q": f"{theirs}attention.self.query",
                      f"{ours}self_attn.w_k": f"{theirs}attention.self.key",
                      f"{ours}self_attn.w_v": f"{theirs}attention.self.value",
                      f"{ours}self_attn.w_o": f"{theirs}attention.output.dense",
                      f"{ours}attn_block.norm": f"{theirs}attention.output.LayerNorm",
                      f"{ours}feed_forward.linear1": f"{theirs}intermediate.dense",
                      f"{ours}feed_forward.linear2": f"{theirs}output.dense",
                      f"{ours}ff_block.norm": f"{theirs}output.LayerNorm"})
    for a, b in pairs.items():
        names[f"{a}.weight"], names[f"{a}.bias"] = (f"{b}.weight", "copy"), (f"{b}.bias", "copy")
    return names


def _llama_names(config: TransformerConfig, prefix: str) -> dict[str, tuple[str, str]]:
    names = {"embedding.tokens.lookup.weight": (f"{prefix}embed_tokens.weight", "copy"),
             "norm.weight": (f"{prefix}norm.weight", "copy")}
    for i in range(config.n_layers):
        ours, theirs = f"blocks.{i}.", f"{prefix}layers.{i}."
        names.update({f"{ours}self_attn.w_{w}.weight": (f"{theirs}self_attn.{w}_proj.weight", "copy") for w in "qkvo"})
        names.update({f"{ours}feed_forward.{w}.weight": (f"{theirs}mlp.{w}_proj.weight", "copy")
                      for w in ("gate", "up", "down")})
        names[f"{ours}attn_block.norm.weight"] = (f"{theirs}input_layernorm.weight", "copy")
        names[f"{ours}ff_block.norm.weight"] = (f"{theirs}post_attention_layernorm.weight", "copy")
    return names


_NAMES = {"gpt2": _gpt2_names, "bert": _bert_names, "llama": _llama_names}
_PREFIXES = {"gpt2": ("transformer.", ""), "bert": ("bert.", ""), "llama": ("model.", "")}
_HEADS = {"gpt2": "lm_head.weight", "bert": "cls.predictions.decoder.weight", "llama": "lm_head.weight"}
_EMBEDDINGS = {"gpt2": "wte.weight", "bert": "embeddings.word_embeddings.weight", "llama": "embed_tokens.weight"}


def _course_weight(state: Mapping[str, torch.Tensor], theirs: str, how: str, d_model: int) -> torch.Tensor:
    w = state[theirs].float()
    if how in ("q", "k", "v", "t") and theirs.endswith("weight") and w.dim() != 2:
        raise CourseValueError(f"{theirs} has shape {tuple(w.shape)}; a Conv1D weight is a matrix (in, out): the "
                               "checkpoint is damaged or not GPT-2's")
    if how in ("q", "k", "v"):
        fused = (d_model, 3 * d_model) if w.dim() == 2 else (3 * d_model,)
        if tuple(w.shape) != fused:
            raise CourseValueError(f"{theirs} has shape {tuple(w.shape)}, expected {fused} (W_q, W_k, W_v of "
                                   f"n_embd={d_model} side by side); the weights do not fit the config")
    if how in ("q", "k", "v"):                                   # GPT-2's fused c_attn: (d, 3d), bias (3d,)
        w = w[..., "qkv".index(how) * d_model:("qkv".index(how) + 1) * d_model]
        return w.t().contiguous() if w.dim() == 2 else w.clone()
    return w.t().contiguous() if how == "t" else w.clone()        # Conv1D stores (in, out): nn.Linear wants (out, in)


def _check_state(state: object) -> dict[str, torch.Tensor]:
    if not isinstance(state, Mapping) or not all(isinstance(k, str) and isinstance(v, torch.Tensor)
                                                 for k, v in state.items()):
        raise CourseTypeError(f"state_dict must map weight names to tensors (model.state_dict(), or the contents of "
                              f"model.safetensors), got {describe(state)}")
    return dict(state)


def from_hf(hf_config: Mapping, state_dict: Mapping[str, torch.Tensor]) -> nn.Module:
    """The course's model holding a published checkpoint's weights, in eval mode, float32.

    Args:
        hf_config: the checkpoint's settings: ``config.json`` as a dict, or ``model.config.to_dict()``.
        state_dict: its weights by Hugging Face's names (with or without the ``transformer.`` / ``bert.`` /
            ``model.`` prefix).

    Returns:
        A :class:`~course_utils.language_model.DecoderOnlyLM` (GPT-2, Llama) or a
        :class:`~course_utils.models.MaskedLanguageModel` (BERT) whose logits equal the published model's
        (``transformers`` given ``attention_mask = ids != pad_token_id`` when the config names a padding token).
        The published config is kept as ``model.hf_config``, so :func:`to_hf` gives it back.

    Raises:
        CourseValueError: naming the option, for any setting the course does not reproduce, and for missing,
            unexpected or wrongly shaped weights.
    """
    family, hf_config = _check_hf_config(hf_config)
    state = _check_state(state_dict)
    if family == "bert":  # the first BERT checkpoints name a LayerNorm's gain and bias gamma and beta
        state = {re.sub(r"LayerNorm\.gamma$", "LayerNorm.weight", re.sub(r"LayerNorm\.beta$", "LayerNorm.bias", k)): v
                 for k, v in state.items()}
    config, tied = _CONFIGS[family](hf_config)
    prefix = next((p for p in _PREFIXES[family] if f"{p}{_EMBEDDINGS[family]}" in state), None)
    if prefix is None:
        raise CourseValueError(f"the weights have no {_EMBEDDINGS[family]!r} (with or without the "
                               f"{_PREFIXES[family][0]!r} prefix): they are not a {family} checkpoint")
    names = _NAMES[family](config, prefix)
    if family == "bert" and names["output.bias"][0] not in state and "cls.predictions.bias" in state:
        names["output.bias"] = ("cls.predictions.bias", "copy")
    head = _HEADS[family]
    if not tied:
        names["lm_head.weight" if family != "bert" else "output.weight"] = (head, "copy")
    missing = sorted({theirs for theirs, _ in names.values()} - set(state))
    if missing:
        hint = "; a checkpoint without its language-model head cannot be loaded" if head in missing else ""
        raise CourseValueError(f"the {family} weights lack {missing[:5]}{' …' if len(missing) > 5 else ''}{hint}")
    used = {theirs for theirs, _ in names.values()} | {head} | ({"cls.predictions.bias", "cls.predictions.decoder.bias"}
                                                              if family == "bert" else set())
    unexpected = sorted(k for k in state if k not in used and not _IGNORED.search(k))
    if unexpected:
        raise CourseValueError(f"the {family} weights hold {unexpected[:5]}{' …' if len(unexpected) > 5 else ''}, "
                               "which the course's model has no place for (another head, or a setting the config "
                               "does not name); refusing to drop them silently")
    model = MaskedLanguageModel(config, tie_weights=tied) if family == "bert" else DecoderOnlyLM(config, tied)
    ours = {name: _course_weight(state, theirs, how, config.d_model) for name, (theirs, how) in names.items()}
    if tied:  # one matrix, two names in the course's state dict
        ours["lm_head.weight" if family != "bert" else "output.weight"] = ours[
            "embedding.tokens.lookup.weight" if family != "bert" else "text_encoder.embedding.tokens.lookup.weight"]
    try:
        model.load_state_dict(ours, strict=True)
    except RuntimeError as error:
        raise CourseValueError(f"the {family} weights do not fit the sizes in its config: {error}") from None
    if family == "llama" and _rope_settings(hf_config)["kind"] == "llama3":
        scaling = _rope_settings(hf_config)["parameters"]
        for block in model.blocks:                               # Llama 3's slowed rotation speeds, in every layer
            block.self_attn.rope_scaling = scaling
    model.hf_config = hf_config
    return model.eval()


def from_transformers(model: nn.Module) -> nn.Module:
    """:func:`from_hf` of a ``transformers`` model in memory (``GPT2LMHeadModel``, ``BertForMaskedLM`` or
    ``LlamaForCausalLM``): its ``config.to_dict()`` and its ``state_dict()``."""
    if not isinstance(model, nn.Module) or not callable(getattr(getattr(model, "config", None), "to_dict", None)):
        raise CourseTypeError(f"model must be a transformers model (an nn.Module with a .config), got "
                              f"{describe(model)}; for a folder use load_checkpoint(path)")
    return from_hf(model.config.to_dict(), model.state_dict())


def load_checkpoint(folder: str | Path) -> nn.Module:
    """:func:`from_hf` of a checkpoint folder: ``config.json`` and ``model.safetensors`` (or the shards a
    ``model.safetensors.index.json`` lists), read with ``safetensors`` — what ``save_pretrained`` writes and what the
    Hugging Face cache holds. No network, no pickle."""
    if not isinstance(folder, (str, Path)) or str(folder) == "":
        raise CourseTypeError(f"folder must be the path of a checkpoint folder, got {describe(folder)}")
    folder = Path(folder)
    if not (folder / "config.json").is_file():
        raise CourseValueError(f"{str(folder)!r} has no config.json; pass the folder save_pretrained wrote (for the "
                               "Hugging Face cache: .../models--NAME/snapshots/HASH)")
    from safetensors.torch import load_file

    def read_json(path: Path) -> dict:
        try:
            value = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as error:
            raise CourseValueError(f"{str(path)!r} is not valid JSON ({error}); the file is damaged: download or "
                                   "save the checkpoint again") from None
        if not isinstance(value, dict):
            raise CourseValueError(f"{str(path)!r} holds {type(value).__name__}, not a JSON object of settings")
        return value

    hf_config = read_json(folder / "config.json")
    if (folder / "model.safetensors").is_file():
        files = [folder / "model.safetensors"]
    elif (folder / "model.safetensors.index.json").is_file():
        weight_map = read_json(folder / "model.safetensors.index.json").get("weight_map")
        if not isinstance(weight_map, dict) or not weight_map:
            raise CourseValueError(f"{str(folder / 'model.safetensors.index.json')!r} has no weight_map naming the "
                                   "shards; the file is damaged")
        files = [folder / str(name) for name in sorted(set(weight_map.values()))]
        missing = [file.name for file in files if not file.is_file()]
        if missing:
            raise CourseValueError(f"{str(folder)!r} lacks the shard{'s' * (len(missing) > 1)} {missing} that "
                                   "model.safetensors.index.json lists; download the missing files")
    else:
        raise CourseValueError(f"{str(folder)!r} has no model.safetensors; the course reads safetensors only (a "
                               "pytorch_model.bin is a pickle: load it with transformers and use from_transformers)")
    state: dict[str, torch.Tensor] = {}
    for file in files:
        try:
            state.update(load_file(str(file)))
        except Exception as error:  # noqa: BLE001 - safetensors raises its own error types for a damaged file
            raise CourseValueError(f"{str(file)!r} cannot be read as safetensors ({type(error).__name__}: "
                                   f"{error}); the file is damaged or truncated: download it again") from None
    return from_hf(hf_config, state)


# ---------------------------------------------------------------------------- and back
def _family_of(model: nn.Module) -> str:
    if isinstance(model, MaskedLanguageModel):
        return "bert"
    if isinstance(model, DecoderOnlyLM):
        return "llama" if model.config.positional == "rope" else "gpt2"
    raise CourseTypeError(f"model must be a DecoderOnlyLM (GPT-2, Llama) or a MaskedLanguageModel (BERT), got "
                          f"{describe(model)}")


_REQUIRED = {  # the switches each family fixes: (field, value, what the family has)
    "gpt2": (("norm", "pre", "Pre-LN"), ("positional", "learned", "learned positions"),
             ("normalization", "layernorm", "LayerNorm"), ("bias", True, "biases"),
             ("scale_embeddings", False, "unscaled embeddings"), ("n_token_types", 0, "no token types"),
             ("embedding_norm", False, "no embedding norm"), ("final_norm", True, "a final LayerNorm")),
    "bert": (("norm", "post", "Post-LN"), ("positional", "learned", "learned positions"),
             ("normalization", "layernorm", "LayerNorm"), ("activation", "gelu", "GELU (erf)"),
             ("bias", True, "biases"), ("scale_embeddings", False, "unscaled embeddings"),
             ("embedding_norm", True, "a LayerNorm on the embeddings"), ("final_norm", False, "no final norm")),
    "llama": (("norm", "pre", "Pre-norm"), ("normalization", "rmsnorm", "RMSNorm"), ("activation", "swiglu", "SwiGLU"),
              ("bias", False, "no biases"), ("scale_embeddings", False, "unscaled embeddings"),
              ("n_token_types", 0, "no token types"), ("embedding_norm", False, "no embedding norm"),
              ("final_norm", True, "a final RMSNorm")),
}


def _check_exportable(model: nn.Module, family: str) -> TransformerConfig:
    config = model.config if family != "bert" else model.text_encoder.config
    for field, value, what in _REQUIRED[family]:
        if getattr(config, field) != value:
            raise CourseValueError(f"this model has {field}={getattr(config, field)!r} but {family} has {what} "
                                   f"({field}={value!r}); only a model built like {family} can be written as one")
    if family == "gpt2" and config.activation not in ("relu", "gelu", "gelu_tanh"):
        raise CourseValueError(f"this model has activation={config.activation!r}; GPT-2 has a two-matrix "
                               "feed-forward (relu, gelu or gelu_tanh)")
    if family == "gpt2" and config.n_kv_heads not in (None, config.n_heads):
        raise CourseValueError(f"this model has n_kv_heads={config.n_kv_heads}; GPT-2 has multi-head attention "
                               f"(n_kv_heads=None or {config.n_heads})")
    if family == "bert" and config.n_token_types < 1:
        raise CourseValueError("this model has n_token_types=0; BERT adds at least one token-type embedding")
    if family != "bert" and not (model.blocks[0].with_residual and model.blocks[0].feed_forward is not None):
        raise CourseValueError("this model was built with with_residual=False or with_feed_forward=False; the "
                               f"published {family} block has both")
    return config


def _rope_parameters(model: nn.Module, config: TransformerConfig) -> dict:
    scaling = getattr(model.blocks[0].self_attn, "rope_scaling", None) if len(model.blocks) else None
    if scaling is None:
        return {"rope_type": "default", "rope_theta": config.rope_base}
    from .modern import LLAMA3_KEYS
    return {"rope_type": "llama3", "rope_theta": config.rope_base, **{key: scaling[key] for key in LLAMA3_KEYS}}


def _hf_settings(model: nn.Module, family: str, config: TransformerConfig, tied: bool) -> dict:
    eps = config.norm_eps
    if family == "gpt2":
        activation = {"gelu_tanh": "gelu_new", "gelu": "gelu", "relu": "relu"}[config.activation]
        return {"vocab_size": config.vocab_size, "n_positions": config.max_len, "n_embd": config.d_model,
                "n_layer": config.n_layers, "n_head": config.n_heads, "n_inner": config.d_ff,
                "activation_function": activation, "resid_pdrop": config.dropout, "embd_pdrop": config.dropout,
                "attn_pdrop": config.dropout, "layer_norm_epsilon": 1e-5 if eps is None else eps,
                "scale_attn_weights": True, "scale_attn_by_inverse_layer_idx": False,
                "reorder_and_upcast_attn": False, "add_cross_attention": False}
    if family == "bert":
        return {"vocab_size": config.vocab_size, "hidden_size": config.d_model,
                "num_hidden_layers": config.n_layers, "num_attention_heads": config.n_heads,
                "intermediate_size": config.d_ff, "hidden_act": "gelu", "hidden_dropout_prob": config.dropout,
                "attention_probs_dropout_prob": config.dropout, "max_position_embeddings": config.max_len,
                "type_vocab_size": config.n_token_types, "layer_norm_eps": 1e-5 if eps is None else eps,
                "is_decoder": False, "add_cross_attention": False}
    return {"vocab_size": config.vocab_size, "hidden_size": config.d_model, "intermediate_size": config.d_ff,
            "num_hidden_layers": config.n_layers, "num_attention_heads": config.n_heads,
            "num_key_value_heads": config.n_kv_heads or config.n_heads, "head_dim": config.d_head,
            "hidden_act": "silu", "max_position_embeddings": config.max_len,
            "rms_norm_eps": torch.finfo(torch.float32).eps if eps is None else eps,  # the course's RMSNorm default
            "rope_parameters": _rope_parameters(model, config),
            "attention_bias": False, "mlp_bias": False, "attention_dropout": config.dropout}


def to_hf(model: nn.Module) -> tuple[dict, dict[str, torch.Tensor]]:
    """The published form of a course model: ``(config dict, state dict)`` by Hugging Face's names and layouts.

    The family follows from the model: a :class:`~course_utils.models.MaskedLanguageModel` is written as BERT, a
    :class:`~course_utils.language_model.DecoderOnlyLM` with RoPE as Llama, one with learned positions as GPT-2
    (``Conv1D`` layout: transposed, W_q W_k W_v fused). The model must be built as that family is (a lesson-08 GPT
    scales its embeddings by √d_model, GPT-2 does not): otherwise a course error names the switch. A model loaded by
    :func:`from_hf` keeps the settings it came with (token ids of [BOS]/[EOS], …).
    """
    family = _family_of(model)
    config = _check_exportable(model, family)
    tied = (model.lm_head.weight is model.embedding.tokens.weight if family != "bert"
            else model.output.weight is model.text_encoder.embedding.tokens.weight)
    base = dict(getattr(model, "hf_config", {}) or {})
    if base.get("model_type") != family:
        base = {}
    for key in ("transformers_version", "_name_or_path", "torch_dtype", "dtype", "rope_theta", "rope_scaling"):
        base.pop(key, None)
    settings = {**base, **_hf_settings(model, family, config, tied), "model_type": family,
                "architectures": [_CLASSES[family]], "tie_word_embeddings": tied, "pad_token_id": config.pad_id}
    if _GPT2_ACTIVATIONS.get(base.get("activation_function")) == config.activation and family == "gpt2":
        settings["activation_function"] = base["activation_function"]  # gelu_new and gelu_pytorch_tanh: same GELU
    ours = model.state_dict()
    prefix = _PREFIXES[family][0]
    names = _NAMES[family](config, prefix)
    state: dict[str, torch.Tensor] = {}
    for name, (theirs, how) in names.items():
        w = ours[name].detach()
        if how in ("q", "k", "v"):
            state.setdefault(theirs, [None, None, None])["qkv".index(how)] = w.t() if w.dim() == 2 else w
        else:
            state[theirs] = (w.t() if how == "t" else w).contiguous().clone()
    for key, parts in list(state.items()):
        if isinstance(parts, list):
            state[key] = torch.cat(parts, dim=-1).contiguous()
    head = "lm_head.weight" if family != "bert" else "output.weight"
    state[_HEADS[family]] = ours[head].detach().clone()
    if family == "bert":
        state["cls.predictions.bias"] = state["cls.predictions.decoder.bias"].clone()
    return settings, state


def to_transformers(model: nn.Module):
    """The ``transformers`` model (``GPT2LMHeadModel``, ``BertForMaskedLM`` or ``LlamaForCausalLM``) equal to a
    course model: :func:`to_hf`, then the class built from that config, weights loaded, eval mode. Its
    ``save_pretrained(folder)`` writes a checkpoint :func:`load_checkpoint` reads back."""
    settings, state = to_hf(model)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")     # building a model never needs the internet
    import transformers

    family = settings.pop("model_type")
    hf_config = transformers.AutoConfig.for_model(family, **settings)
    hf_class = getattr(transformers, _CLASSES[family])
    hf_model = hf_class(hf_config)
    missing, unexpected = hf_model.load_state_dict(state, strict=False)
    missing = [k for k in missing if not _IGNORED.search(k)]
    if missing or unexpected:
        raise CourseValueError(f"transformers {transformers.__version__} names the {family} weights differently: "
                               f"missing {missing[:5]}, unexpected {unexpected[:5]}")
    if settings["tie_word_embeddings"]:
        hf_model.tie_weights()
    return hf_model.float().eval()

