"""course_utils — the finished building blocks of *Transformer from Scratch*.

Read it like the course's table of contents: ``masks`` → ``embedding`` → ``positional`` → ``attention`` →
``layers`` → ``models`` → ``training``; plus ``runtime`` (seeds, device, threads), ``plotting``, ``widgets`` and
``exercises``.
"""
from .attention import MultiHeadAttention, capture_attention, scaled_dot_product_attention
from .config import TransformerConfig, count_parameters
from .embedding import TokenEmbedding, check_token_ids
from .layers import DecoderLayer, EncoderLayer, PositionwiseFeedForward
from .masks import causal_mask, combine_masks, padding_mask, target_mask
from .models import (Decoder, Encoder, InputEmbedding, MaskedLanguageModel, Seq2SeqTransformer, TextEncoder,
                     TransformerClassifier)
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_table
from .runtime import environment_report, pick_device, seed_everything, set_threads

__version__ = "0.1.0"
