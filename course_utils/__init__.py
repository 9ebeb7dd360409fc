"""course_utils — the finished building blocks of *Transformer from Scratch*.

Read it like the course's table of contents: ``masks`` → ``embedding`` → ``positional`` → ``attention`` →
``layers`` → ``models`` → ``training``; plus ``tokenization``, ``data``, ``mlm``, ``decoding``, ``runtime`` (seeds,
device, threads), ``plotting``, ``widgets`` and ``exercises``.
"""
from .attention import MultiHeadAttention, capture_attention, scaled_dot_product_attention
from .config import TransformerConfig, count_parameters
from .data.pydoc_corpus import load_pydoc_corpus
from .embedding import TokenEmbedding, check_token_ids
from .layers import DecoderLayer, EncoderLayer, PositionwiseFeedForward
from .masks import causal_mask, combine_masks, padding_mask, target_mask
from .models import (Decoder, Encoder, InputEmbedding, MaskedLanguageModel, Seq2SeqTransformer, TextEncoder,
                     TransformerClassifier)
from .plotting import plot_history, show_heatmaps
from .positional import LearnedPositionalEncoding, SinusoidalPositionalEncoding, sinusoidal_table
from .runtime import environment_report, pick_device, seed_everything, set_threads
from .tokenization import (BOS_ID, CLS_ID, EOS_ID, MASK_ID, PAD_ID, SEP_ID, SPECIAL_TOKENS, BPETokenizer,
                           CharTokenizer, WordTokenizer, pad_batch)
from .training import fit, make_loader

__version__ = "0.1.0"
