"""The from-scratch byte-level BPE equals Hugging Face `tokenizers` (ByteLevel pre-tokenizer + BpeTrainer) on any
corpus: the same word splitting on every code point, the same merges in the same order, the same vocabulary ids
for merged tokens, the same encodings and decodings — checked on generated corpora and on named cases."""
import json
import warnings

import pytest
import regex
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from course_utils.tokenization import (
    _LETTER,
    _NUMBER,
    _OTHER,
    N_SPECIAL_TOKENS,
    SPECIAL_TOKENS,
    BPETokenizer,
    byte_level_bytes,
    byte_level_text,
    split_words,
    tie_break_key,
)

tokenizers = pytest.importorskip("tokenizers")
from tokenizers import decoders, models, pre_tokenizers, trainers  # noqa: E402


def train_hf(texts, vocab_size, min_frequency):
    """Hugging Face configured like the course's BPE (the setup lesson 01 uses)."""
    hf = tokenizers.Tokenizer(models.BPE())
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    hf.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                  special_tokens=list(SPECIAL_TOKENS),
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    hf.train_from_iterator(texts, trainer)
    return hf


def hf_merges(hf):
    """HF's merge list, in priority order, as pairs of bytes."""
    merges = json.loads(hf.to_str())["model"]["merges"]
    return [tuple(byte_level_bytes(p) for p in (m.split(" ") if isinstance(m, str) else m)) for m in merges]


def our_merges(tok):
    """Our merge list in priority order, as pairs of bytes (a pair learned twice counts at its later place)."""
    return [(tok.token_bytes[a], tok.token_bytes[b])
            for (a, b), _ in sorted(tok.merge_rank.items(), key=lambda item: item[1][0])]


def to_hf_ids(hf, ids):
    """Our ids as HF's: special and merged tokens have the same ids; byte b is 7 + b here, HF orders bytes by
    their GPT-2 character."""
    return [hf.token_to_id(byte_level_text(bytes([i - N_SPECIAL_TOKENS])))
            if N_SPECIAL_TOKENS <= i < BPETokenizer.first_merge_id else i for i in ids]


def assert_same_as_hf(texts, vocab_size, min_frequency, held_out=()):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # stopping early is fine here: HF stops at the same point
        ours = BPETokenizer.train(texts, vocab_size, min_frequency)
    hf = train_hf(texts, vocab_size, min_frequency)
    assert our_merges(ours) == hf_merges(hf)
    assert ours.vocab_size == hf.get_vocab_size()
    assert [ours.token_bytes[i] for i in range(ours.first_merge_id, ours.vocab_size)] == [
        byte_level_bytes(hf.id_to_token(i)) for i in range(ours.first_merge_id, hf.get_vocab_size())]
    for text in [*held_out, *texts]:
        hf.encode_special_tokens = True  # "[CLS]" in the text is text, as in our default
        ids, expected = ours.encode(text), hf.encode(text).ids
        assert to_hf_ids(hf, ids) == expected, text
        assert ours.decode(ids) == hf.decode(expected) == text
        hf.encode_special_tokens = False  # HF's default: the text "[CLS]" becomes the special token
        ids, expected = ours.encode(text, recognize_special_tokens=True), hf.encode(text).ids
        assert to_hf_ids(hf, ids) == expected, text
        assert ours.decode(ids) == hf.decode(expected)
        assert ours.decode(ids, skip_special_tokens=False) == hf.decode(expected, skip_special_tokens=False) == text
    return ours


# ---------------------------------------------------------------------------------------------- word splitting
def test_word_splitting_equals_hf_on_every_code_point():
    """Sort every code point into letters / numbers / whitespace / other by our pattern's classes; then each class,
    written as one string, must be a single word for both splitters — so HF puts every code point in the same
    class (a code point of another class would end the run and start a new word). Unassigned and private-use code
    points are left out of the "other" run to keep it short: they are "other" for both (HF's Unicode tables are
    older than those of `regex`, and a code point unassigned today was unassigned then)."""
    every_code_point = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    letters = "".join(regex.findall("(?V1)" + _LETTER, every_code_point))
    numbers = "".join(regex.findall("(?V1)" + _NUMBER, every_code_point))
    spaces = "".join(regex.findall(r"\s", every_code_point))
    others = "".join(regex.findall(rf"(?V1)[{_OTHER}--[\p{{Cn}}\p{{Co}}]]", every_code_point))
    unassigned_or_private = regex.findall(r"[\p{Cn}\p{Co}]", every_code_point)
    assert len(letters) + len(numbers) + len(spaces) + len(others) + len(unassigned_or_private) == len(every_code_point)
    assert set("\x1c\x1d\x1e\x1f") <= set(others) and set("²½①") <= set(numbers) and set(" \t\n\u3000") <= set(spaces)
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for run in (letters, numbers, spaces, others):
        assert split_words(run) == [run]
        assert [offsets for _, offsets in pre_tokenizer.pre_tokenize_str(run)] == [(0, len(run))]


@pytest.mark.parametrize("text, words", [
    ("x² + ½ = ①", ["x", "²", " +", " ½", " =", " ①"]),         # numbers that are not digits
    ("a\x1cb\x1fc", ["a", "\x1c", "b", "\x1f", "c"]),             # file/unit separators are symbols, not spaces
    ("Ⅻ٣३", ["Ⅻ٣३"]),                                           # Roman numeral, Arabic-Indic and Devanagari digits
    ("a  \t\n b", ["a", "  \t\n", " b"]),                         # a run of spaces keeps its last space for the word
    ("we're John's", ["we", "'re", " John", "'s"]),
])
def test_word_splitting_named_cases(text, words):
    assert split_words(text) == words
    pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert [byte_level_text(w.encode()) for w in words] == [p for p, _ in pre_tokenizer.pre_tokenize_str(text)]


# ---------------------------------------------------------------------------------------------- named corpora
GERMAN = ["Die Größe der Häuser überrascht die Übersetzerin.", "Schöne Straßen, große Bäume; fünfundzwanzig Äpfel.",
          "Übergrößenträger naïve café"] * 3
CHINESE = ["我打你。你打我。我爱你。", "他打我，我打他。", "我爱吃苹果。你好，世界！"] * 3
DOCSTRINGS = ['def area(r):\n    """Return πr² for r ≥ 0 (½ of 2πr²)."""\n    return 3.14159 * r ** 2\n',
              "Return the number of items in a container. 返回容器中的项目数。 ① see § 3.2",
              "\tIndented\x1c\x1f line  with   spaces\u00a0and\u3000ideographic space 🤖🚀"] * 2


@pytest.mark.parametrize("texts, vocab_size, min_frequency", [
    (["hello world"] * 2, 300, 2),  # every pair occurs twice: the tie rule decides every merge
    (GERMAN, 330, 2),
    (CHINESE, 300, 2),
    (DOCSTRINGS, 400, 1),
    (["abc abc"], 1000, 2),  # stops early: too little text
    (["aaaaaaaaaaaaaaaa bbbbbbbbbbbb aaaa a aa"], 300, 1),  # runs of one byte: overlapping pairs
    (["[CLS] is text here, [PAD] too"] * 3, 300, 0),
], ids=["hello-world-x2", "german", "chinese", "mixed-docstrings", "stops-early", "byte-runs", "special-text"])
def test_named_corpora_equal_hf(texts, vocab_size, min_frequency):
    held_out = ["hello, world!", "Größenwahn", "你打他。", "x² ≥ ½", "  [SEP]\x1d", ""]
    assert_same_as_hf(texts, vocab_size, min_frequency, held_out)


def test_ties_follow_hf_byte_order_not_raw_byte_values():
    # In ["hello world"] * 2 every pair occurs twice. By raw byte value (" ", "w") = (32, 119) would come first;
    # HF orders bytes by their GPT-2 character, where the space ("Ġ") comes after every letter: ("e", "l") wins.
    tok = BPETokenizer.train(["hello world"] * 2, vocab_size=264)
    assert tok.token_bytes[263] == b"el"
    e, letter_l, space, w = (N_SPECIAL_TOKENS + ord(c) for c in "el w")
    assert tie_break_key((e, letter_l)) < tie_break_key((space, w)) and (space, w) < (e, letter_l)
    hf = train_hf(["hello world"] * 2, 300, 2)
    assert [tie_break_key((i, i))[0] for i in range(N_SPECIAL_TOKENS, BPETokenizer.first_merge_id)] == [
        hf.token_to_id(byte_level_text(bytes([b]))) for b in range(256)]  # the key is HF's id of each byte


def test_course_corpus_equals_hf():
    from course_utils.data.pydoc_corpus import load_pydoc_corpus

    train, held_out = load_pydoc_corpus().sample(1500, seed=0).split(0.2, seed=0)
    assert_same_as_hf(train.sentences, 600, 2, held_out.sentences)


# ---------------------------------------------------------------------------------------------- generated corpora
FRAGMENTS = {
    "ascii": "abcdefghij klmnop XYZ .,;:!?-_()[]{}'\"#0123456789",
    "accented": "àáâäæçèéêëíîïñóôöøœßúûüÿÀÄÉÖÜŁąćęłńśźżğışİ",
    "cjk": "我你他打爱吃苹果。，！世界中文的是不了人在有我们日本語ひらがなカタカナ한국어",
    "emoji": "🤖🚀👍🏽❤️🇩🇪👩‍💻✨🙂",
    "numerals": "²³¹½¼⅓①②⑳ⅫⅣ٣३௫𝟘",
    "control": "\x00\x01\x1c\x1d\x1e\x1f\x7f\x85\u200b\u200d\ufeff",
    "whitespace": "  \t\n\r\u00a0\u2003\u3000",
}
ALL_CHARACTERS = "".join(FRAGMENTS.values())
WORDS = ["the", " the", "'s", "'re", "don't", "[CLS]", "[PAD]", "   ", "\n\n", "aaaa", "ababab", "x²", "½", "我爱"]


def line_strategy():
    piece = st.one_of(
        st.sampled_from(WORDS),
        *[st.text(alphabet=chars, min_size=1, max_size=8) for chars in FRAGMENTS.values()],
        st.text(alphabet=ALL_CHARACTERS, max_size=12),
    )
    return st.lists(piece, max_size=10).map("".join)


corpus_strategy = st.lists(
    st.tuples(line_strategy(), st.integers(1, 4)), min_size=1, max_size=8,  # each line repeated 1-4 times
).map(lambda lines: [line for line, times in lines for _ in range(times)])


@settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(texts=corpus_strategy, vocab_size=st.integers(263, 420), min_frequency=st.integers(0, 3),
       held_out=st.lists(st.one_of(line_strategy(), st.text(max_size=30)), max_size=4))
def test_generated_corpora_equal_hf(texts, vocab_size, min_frequency, held_out):
    assume(any(texts))  # the course refuses an empty corpus (HF would train an empty vocabulary)
    assert_same_as_hf(texts, vocab_size, min_frequency, held_out)


# ---------------------------------------------------------------------------------------------- encoding alone
@st.composite
def merge_lists(draw):
    """Random valid merge lists over a few bytes, so pairs repeat and tokens get rebuilt by other merges."""
    merges, ids = [], [N_SPECIAL_TOKENS + b for b in b"ab "]
    for _ in range(draw(st.integers(0, 40))):
        merges.append((draw(st.sampled_from(ids)), draw(st.sampled_from(ids))))
        ids = sorted({*ids, *range(BPETokenizer.first_merge_id, BPETokenizer(merges).vocab_size)})
    return merges


@settings(max_examples=150, deadline=None, derandomize=True)
@given(merges=merge_lists(), texts=st.lists(st.text(alphabet="ab \n", max_size=30), min_size=1, max_size=5))
def test_encoding_with_any_merge_list_equals_hf(merges, texts):
    """HF's BPE model built from the same vocabulary and merges cuts every text the same way, even with a pair
    listed twice or a token that two different merges build."""
    ours = BPETokenizer(merges)
    vocab = {byte_level_text(bytes([b])): N_SPECIAL_TOKENS + b for b in range(256)}
    vocab.update({byte_level_text(t): i for i, t in enumerate(ours.token_bytes) if i >= ours.first_merge_id})
    hf_merge_list = [(byte_level_text(ours.token_bytes[a]), byte_level_text(ours.token_bytes[b])) for a, b in merges]
    hf = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=hf_merge_list))
    hf.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    for text in texts:
        assert ours.encode(text) == hf.encode(text).ids, text
