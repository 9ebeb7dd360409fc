"""Lesson 06's downstream task (course_utils.mlm_transfer, course_utils.data.pydoc_sources): labels from the
corpus itself, a fixed test set, few labels, paired seeds."""
import math

import pytest

from course_utils.config import TransformerConfig
from course_utils.data.pydoc_corpus import load_pydoc_corpus
from course_utils.data.pydoc_sources import LANGUAGE_REFERENCE, sentence_sources, source_name
from course_utils.mlm_transfer import Comparison, fine_tune_accuracy, make_source_task
from course_utils.tokenization import BPETokenizer, add_special_tokens


def test_every_corpus_sentence_has_a_source():
    corpus = load_pydoc_corpus()
    sources = sentence_sources()
    assert set(sources) == set(corpus.sentences)
    names = set(sources.values())
    assert LANGUAGE_REFERENCE in names and "asyncio" in names and "email" in names
    assert all(name and "/" not in name and not name.endswith(".py") for name in names)


def test_source_name_is_the_top_level_package_or_module(tmp_path):
    assert source_name(tmp_path / "email" / "mime" / "text.py", tmp_path) == "email"
    assert source_name(tmp_path / "argparse.py", tmp_path) == "argparse"


SOURCES = {f"sentence {c} {i}.": c for c in "abc" for i in range(30)} | {f"rare {i}.": "d" for i in range(5)}


def test_source_task_keeps_the_most_frequent_classes_and_a_disjoint_test_set():
    task = make_source_task(list(SOURCES), SOURCES, n_classes=3, n_test_per_class=10, seed=0)
    assert sorted(task.classes) == ["a", "b", "c"]
    assert len(task.test_sentences) == 30
    assert all(SOURCES[s] == task.classes[y] for s, y in zip(task.test_sentences, task.test_labels))
    for name in task.classes:
        assert len(task.pool[name]) == 20 and not set(task.pool[name]) & set(task.test_sentences)
    texts, labels = task.labelled(5, seed=1)
    assert len(texts) == 15 and texts == task.labelled(5, seed=1)[0] and texts != task.labelled(5, seed=2)[0]
    assert all(SOURCES[t] == task.classes[y] for t, y in zip(texts, labels))
    with pytest.raises(ValueError, match="only 20"):
        task.labelled(21, seed=0)


def test_paired_difference_is_the_mean_and_standard_error_of_the_differences():
    comparison = Comparison((10,), (0, 1, 2), pretrained={10: [0.8, 0.7, 0.9]}, scratch={10: [0.5, 0.6, 0.5]})
    mean, se = comparison.paired_difference(10)
    differences = [0.3, 0.1, 0.4]
    assert mean == pytest.approx(sum(differences) / 3)
    sd = math.sqrt(sum((d - mean) ** 2 for d in differences) / 2)
    assert se == pytest.approx(sd / math.sqrt(3))


def test_fine_tuning_is_reproducible_and_learns_an_easy_split():
    texts = [f"apples and pears number {i}." for i in range(20)] + [f"cars and roads number {i}." for i in range(20)]
    sources = {t: ("fruit" if t.startswith("apples") else "traffic") for t in texts}
    task = make_source_task(texts, sources, n_classes=2, n_test_per_class=10, seed=0)
    tokenizer = BPETokenizer.train(texts, vocab_size=300)
    config = TransformerConfig(vocab_size=300, d_model=16, n_heads=2, d_ff=32, n_layers=1, max_len=24, dropout=0.0)

    def encode(sentences):
        return [add_special_tokens(tokenizer.encode(s), add_cls=True, add_sep=True, max_len=24) for s in sentences]

    train_texts, labels = task.labelled(5, seed=0)
    first = fine_tune_accuracy(config, None, encode, task, train_texts, labels, seed=0, steps=40, lr=3e-3)
    again = fine_tune_accuracy(config, None, encode, task, train_texts, labels, seed=0, steps=40, lr=3e-3)
    assert first == again
    assert first >= 0.9
