"""course_utils — the finished building blocks of *Transformer from Scratch*.

Read it like the course's table of contents, in the order the lessons build it: ``small_loop`` (lesson 00) →
``tokenization``, ``embedding`` (01) → ``positional`` (02) → ``masks``, ``attention`` (03) → ``layers`` (04) →
``models``, ``losses``, ``training`` (05) → ``mlm`` (06) → ``kv_cache``, ``decoding`` (07) → ``ngram``,
``language_model`` (08) → ``modern``, ``interop`` (09) → ``distributed``, ``train`` (10); plus ``data``,
``runtime`` (seeds, device, threads), the pictures (``plotting``, ``diagrams``, ``widgets``), ``exercises`` and
the commands (``train``, ``ablation``, ``classroom``).

Its floors, each importing only from the floors below: the ground (``errors``, ``validation``, ``masks``,
``config``, ``runtime``, ``small_loop``, ``lesson_times``); blocks (``embedding``, ``positional``, ``attention``,
``kv_cache``, ``modern``, ``layers``, ``memory``); models (``models``, ``language_model``, ``reference``,
``interop``); text and data (``tokenization``, ``data``); the loop (``losses``, ``training``, ``decoding``, ``mlm``,
``ngram``, ``distributed``, ``mlm_transfer``, ``instruct``); recipes and commands (``tasks``, ``train``,
``ablation``, ``mlm_checkpoint``, ``gpt_checkpoint``); pictures (``plotting``, ``diagrams``, ``widgets``); teaching
(``exercises``); the classroom (``classroom``).
"""
from .attention import MultiHeadAttention, capture_attention, scaled_dot_product_attention
from .config import TransformerConfig, count_parameters
from .data.pydoc_corpus import load_pydoc_corpus
from .embedding import TokenEmbedding
from .layers import DecoderLayer, EncoderLayer, PositionwiseFeedForward
from .masks import causal_mask, combine_masks, padding_mask, target_mask
from .models import (
    Decoder,
    Encoder,
    InputEmbedding,
    MaskedLanguageModel,
    Seq2SeqTransformer,
    TextEncoder,
    TransformerClassifier,
)
from .plotting import (
    ARCHITECTURE_PARTS,
    draw_architecture,
    draw_encoder_decoder_masks,
    draw_multihead_split,
    draw_qkv_projection,
    draw_residual_stream,
    draw_rotation,
    plot_history,
    show_heatmaps,
    show_mask,
)
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_table
from .runtime import environment_report, pick_device, seed_everything, set_threads
from .tokenization import (
    BOS_ID,
    CLS_ID,
    EOS_ID,
    MASK_ID,
    PAD_ID,
    SEP_ID,
    SPECIAL_TOKENS,
    BPETokenizer,
    CharTokenizer,
    WordTokenizer,
    pad_batch,
)
from .training import fit, make_loader
from .validation import check_token_ids

__version__ = "0.1.0"

__all__ = [
    "ARCHITECTURE_PARTS",
    "BOS_ID",
    "BPETokenizer",
    "capture_attention",
    "causal_mask",
    "CharTokenizer",
    "check_token_ids",
    "CLS_ID",
    "combine_masks",
    "count_parameters",
    "Decoder",
    "DecoderLayer",
    "draw_architecture",
    "draw_encoder_decoder_masks",
    "draw_multihead_split",
    "draw_qkv_projection",
    "draw_residual_stream",
    "draw_rotation",
    "Encoder",
    "EncoderLayer",
    "environment_report",
    "EOS_ID",
    "fit",
    "InputEmbedding",
    "LearnedPositionalEncoding",
    "load_pydoc_corpus",
    "make_loader",
    "MASK_ID",
    "MaskedLanguageModel",
    "MultiHeadAttention",
    "pad_batch",
    "PAD_ID",
    "padding_mask",
    "pick_device",
    "plot_history",
    "PositionwiseFeedForward",
    "scaled_dot_product_attention",
    "seed_everything",
    "SEP_ID",
    "Seq2SeqTransformer",
    "set_threads",
    "show_heatmaps",
    "show_mask",
    "sinusoidal_table",
    "SinusoidalPositionalEncoding",
    "SPECIAL_TOKENS",
    "target_mask",
    "TextEncoder",
    "TokenEmbedding",
    "TransformerClassifier",
    "TransformerConfig",
    "WordTokenizer",
]
