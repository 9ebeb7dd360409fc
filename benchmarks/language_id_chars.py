"""Lesson 05's Transformer on characters over three seeds: the notebook trains seed 0 live and reads seeds 1 and 2
from here.

    OMP_NUM_THREADS=1 python benchmarks/language_id_chars.py          # seeds 0-2, about 1 minute per seed on one core
    OMP_NUM_THREADS=1 python benchmarks/language_id_chars.py --probes # seed 0: 15 epochs; a smaller model

Each seed trains exactly as lesson 05's section 4b does: section 3b's model and recipe (2 Post-LN layers, d_model 64,
4 heads, d_ff 256, dropout 0.1, AdamW at 3e-3, 30 warmup steps, cosine, clipping at 1, batches of 64, 5 epochs), on
the training strings read one character per id (``CharTokenizer`` trained on them, ``[CLS]`` in front, cut to 128
ids). For the Django test strings and the CLDR phrases it records which strings the model gets right, as a string of
0/1 in the sets' order; the notebook pairs them with its own character n-gram model. Written to
``benchmarks/language_id_chars.json``. ``--probes`` adds seed 0 trained 3 times longer (15 epochs) and a smaller model
(d_model 32, 2 heads, d_ff 64, 1 layer), their test and CLDR accuracy, to the same file.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import torch

from course_utils import TransformerClassifier, TransformerConfig, seed_everything, set_threads
from course_utils.data.batching import ReshuffledEachEpoch, length_bucketed_batches
from course_utils.data.language_id import load_cldr_phrases, load_language_id
from course_utils.losses import classification_loss
from course_utils.tokenization import CharTokenizer, add_special_tokens
from course_utils.training import fit

CHAR_LEN = 128
OUT = Path(__file__).with_suffix(".json")


def main(seeds, probes=False) -> None:
    set_threads(1)
    data = load_language_id(validation_fraction=0.15)
    chars = CharTokenizer.train(data.train_texts)
    encode = lambda texts: [add_special_tokens(chars.encode(t), add_cls=True, max_len=CHAR_LEN) for t in texts]  # noqa: E731
    pad = lambda texts: torch.nn.utils.rnn.pad_sequence([torch.tensor(ids) for ids in encode(texts)], batch_first=True)  # noqa: E731
    batches = length_bucketed_batches(encode(data.train_texts), 64, labels=data.train_labels, seed=0)
    cldr_texts, cldr_labels = load_cldr_phrases(data.languages)
    sets = {"test": (pad(data.test_texts), torch.tensor(data.test_labels)),
            "cldr": (pad(cldr_texts), torch.tensor(cldr_labels))}
    def train(seed, epochs=5, d_model=64, n_heads=4, d_ff=256, n_layers=2):
        seed_everything(seed)
        config = TransformerConfig(vocab_size=chars.vocab_size, d_model=d_model, n_heads=n_heads, d_ff=d_ff,
                                   n_layers=n_layers, max_len=CHAR_LEN, dropout=0.1, norm="post")
        model = TransformerClassifier(config, len(data.languages))
        fit(model, ReshuffledEachEpoch(batches, seed=seed), classification_loss, epochs=epochs, lr=3e-3,
            warmup_steps=30, schedule="cosine", clip_norm=1.0, progress=False)
        with torch.no_grad():
            return {name: "".join("1" if r else "0" for r in (model.eval()(ids).argmax(-1) == truth).tolist())
                    for name, (ids, truth) in sets.items()}

    if probes:
        record = json.loads(OUT.read_text())
        record["probes"] = {}
        for name, kwargs in (("15 epochs", {"epochs": 15}),
                             ("d_model 32, 1 layer", {"d_model": 32, "n_heads": 2, "d_ff": 64, "n_layers": 1})):
            right = train(0, **kwargs)
            record["probes"][name] = {k: bits.count("1") / len(bits) for k, bits in right.items()}
            print(name, record["probes"][name], flush=True)
    else:
        record = {"torch": torch.__version__, "threads": 1, "char_vocab_size": chars.vocab_size, "seeds": {}}
        for seed in seeds:
            record["seeds"][str(seed)] = right = train(seed)
            print(seed, {name: f"{bits.count('1') / len(bits):.1%}" for name, bits in right.items()}, flush=True)
    OUT.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--probes", action="store_true")
    args = parser.parse_args()
    main(args.seeds, args.probes)
