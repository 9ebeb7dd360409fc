"""Teaching notes for one lesson, generated from the notebook and the exercises' declared mistakes.

* the **time** a learner needs, per sitting, comes from the course's one time rule (:mod:`course_utils.lesson_times`:
  its constants and its estimate are imported, not copied);
* a **90-minute plan per sitting** (a lesson longer than two hours has a break cell that ends its first sitting):
  fixed slots for the opening and the wrap-up, each small exercise of the sitting at the rule's minutes, each
  capstone at the rule's 30 minutes — in class where the sitting still leaves teaching time, otherwise as homework
  (listed below the table, outside the 90 minutes) — and the rest shared among the sections in proportion to the
  rule's minutes for them; a section whose code runs only on a GPU gets :data:`GPU_ONLY_MINUTES` of reading;
* the **misconceptions** are the typical mistakes each exercise declares (``Exercise.mistakes``: the bug and the
  message the check gives it), read from the package — nothing withheld from an edition is needed (see
  :mod:`.withheld`);
* the **questions with model answers**: the lesson's own "Check your understanding" / "Why?" questions, each with
  the answer the notebook gives in its collapsed ``<details>`` cell (:func:`lesson_questions`; a question without
  an answer is listed as such), and a few more for class discussion written here (:data:`DISCUSSION`), each with a
  model answer.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import lesson_times as RULE
from .cells import lesson_exercises, notebook_lesson, parse_cell

COURSE_ROOT = Path(__file__).resolve().parents[2]
PLAN_MINUTES, OPENING_MINUTES, WRAP_UP_MINUTES, MIN_SECTION_MINUTES, GPU_ONLY_MINUTES = 90, 5, 10, 2, 1
CLOSING_SECTIONS = ("Summary", "Common errors", "Check your understanding", "Why?", "Where to go next")
QUESTION_HEADING = re.compile(r"^##\s+(Check your understanding|Why\?).*$", re.MULTILINE)
ANSWERS = re.compile(r"<details>\s*<summary>[^<]*(<b>)?\s*Answers", re.IGNORECASE)
ITEM = re.compile(r"^(\d+)\.\s+(.*)$")


MINUTES_PER_EXERCISE, MINUTES_PER_CAPSTONE = RULE.MINUTES_PER_EXERCISE, RULE.MINUTES_PER_CAPSTONE

# Questions for class discussion beyond the lesson's own, each with a model answer: ``{lesson: [(q, a), …]}``.
DISCUSSION = {
    "00": [("Two runs of the same notebook give different numbers. List everything that could differ, and which of "
            "those `seed_everything` removes.",
            "`seed_everything` fixes the random generators of Python, NumPy and PyTorch (CPU and every GPU): weight "
            "initialisation, dropout masks, shuffling and sampling repeat. It does not fix the library versions "
            "(other kernels, other defaults), the hardware and the number of threads (floating-point sums in "
            "another order), nondeterministic GPU kernels, data read from the machine (the corpus comes from the "
            "installed Python's documentation), nor anything timed."),
           ("Why does the course check its environment before teaching anything? What would a version mismatch "
            "look like in lesson 05?",
            "A mismatch shows up far from its cause: in lesson 05 as an error about a function or argument an older "
            "library lacks, in the middle of training, or silently as numbers that differ from the stored ones "
            "because a default changed. A check at the start turns it into one message that names the fix."),
           ],
    "01": [("A character tokenizer never meets an unknown word. Why do real models still use subwords?",
            "Characters make sequences several times longer — attention's cost grows with the square of the length "
            "— and each token carries little meaning, so the model spends layers assembling words. Subwords keep "
            "frequent words whole and cut rare ones into known pieces: short sequences and, on bytes, still no "
            "unknown input."),
           ("BPE works on bytes, not characters. What does that buy for Chinese or emoji, and what does it cost in "
            "sequence length?",
            "Any text is representable: the 256 byte tokens cover every UTF-8 string, so nothing is ever unknown "
            "and everything round-trips. The cost: a character outside ASCII is 2–4 bytes, so where the merges "
            "learned on (here English) text never combined them, a Chinese character or an emoji becomes 2–4 "
            "tokens — much longer sequences for text unlike the training corpus."),
           ],
    "02": [("Self-attention without positions is order-blind. Which tasks would still work without any positional "
            "information?",
            "Tasks that depend on which tokens occur, not in which order: topic or language identification from "
            "the words present, whether a token occurs (lesson 05's token-99 rule), counting, sums or maxima of a "
            "set. Without positions, attention is permutation-equivariant and a pooled output is "
            "permutation-invariant."),
           ("A shift of k positions is the same rotation for every position. Why does that help a model learn "
            "relative order?",
            "$PE(p+k) = R_k\\,PE(p)$ with $R_k$ independent of $p$, so one linear map can express \"k positions "
            "further\" everywhere, and the dot product of two encodings depends only on their offset. What a head "
            "learns about an offset at one place holds at every place."),
           ("When would you choose a learned positional table over the sinusoidal one, and what happens past "
            "max_len for each?",
            "A learned table fits the data when there is plenty of it and the inputs have a fixed maximum length "
            "(BERT and GPT-2 learned theirs). Past `max_len` the course's modules both refuse: neither has a row. "
            "The sinusoidal table can be rebuilt longer without training anything — whether the model works there "
            "is another question (lesson 09 trains at 32 tokens and tests at 64); a learned table has no trained "
            "rows beyond `max_len` at all."),
           ],
    "03": [("A fully masked query row gives NaN with −∞. Where in a real batch does such a row occur?",
            "Where a query may see no key: a sequence that is all padding, or — with a causal mask combined with "
            "padding on the left — the padding positions at the start, which see only padding before them. One NaN "
            "row then spreads through the batch in the next layer, which is why the course fills with a finite "
            "minimum and zeroes the weights."),
           ("Attention costs O(n²) in the sequence length. What does that mean for a 10× longer document, in time "
            "and in memory?",
            "About 100× the attention scores per head and layer: ~100× the time of the attention part (the linear "
            "layers grow only 10×), and 100× the memory for the weight matrix where it is stored (the training "
            "path keeps it for the backward pass). Fused kernels avoid storing it but still compute every score."),
           ],
    "04": [("Section 6 trains Post-LN and Pre-LN from two embedding starts, six seeds each. What does it show, "
            "and what does it not show?",
            "From lesson 01's start every run left the plateau (20-step loss below 0.6) by step 116; from "
            "nn.Embedding's start (tokens RMS 5.76, 8 times the positions) every run left it later than the same "
            "placement and seed from lesson 01's start; a seed's two placements share weights and batches, so the "
            "sign test counts seeds: 6 of 6, p = 1/64. The placement mattered from both starts: from lesson 01's "
            "start Post-LN was later on 6 of 6 seeds (by 2 to 34 steps, p = 1/64); from the default start it was "
            "later on 5 of 6 seeds (p = 7/64) and stuck on 3 (through step 1,000), Pre-LN on none (p = 1/8). On those"
            " 3 seeds a 400-step warmup and a constant 1e-3 without warmup both freed all 3 (steps 204/315/146 and "
            "268/144/161). Not shown: that Post-LN needs warmup (only that the full rate 3e-3 from step 1 was too "
            "large for it from this start), nor why (Liu et al. 2020: unbalanced gradients are not the root cause)."),
           ],
    "05": [("A classifier reaches the majority-class accuracy. How do you tell whether it learned anything?",
            "Compare with baselines (the majority class, a simple count model), read per-class recall or balanced "
            "accuracy and the confusion matrix, and compare the loss with the entropy of the label distribution "
            "(for balanced classes $\\ln(\\text{classes})$). A model that predicts only the majority class has a "
            "recall of 0 for every other class."),
           ("Which baseline in the notebook was hardest to beat, and what does that say about the task?",
            "The character-n-gram linear model. Which language a string is in shows in its spelling — short "
            "character sequences that a linear model sees directly — so the task needs little context or word "
            "order, and with a few thousand training strings a small Transformer has little room to do better."),
           ],
    "06": [("Why compare masked-token accuracy with a unigram baseline rather than report it alone?",
            "A raw accuracy depends on the vocabulary, the tokenizer and which positions were selected: frequent "
            "pieces (' the', punctuation) can be guessed without any context. The unigram shows what needs no "
            "context; only the gap above it (and above the neighbour counts) was learned from the context."),
           ("Tying the output layer to the embedding saves parameters. What else might it change?",
            "The embedding now gets a gradient at every predicted position — through the softmax every row "
            "moves — not only for the tokens in the input, so rare tokens' vectors learn too; input and output "
            "share one geometry (tokens predicted in similar contexts get similar input vectors); and one "
            "initialisation must suit both roles, which is why the lesson's embedding starts small and is scaled "
            "by √d_model."),
           ],
    "07": [("Teacher forcing feeds the true previous token during training. What goes wrong at inference time, and "
            "how does beam search help?",
            "At inference the decoder reads its own previous outputs, which it never saw in training; one wrong "
            "token puts it in a state it was not trained for, and errors can cascade (exposure bias). Beam search "
            "keeps several candidates, so an early choice that looked best but leads to a poor sequence can be "
            "dropped later; it does not remove the mismatch, and it helps only where the model is unsure."),
           ("Beam search fixed 25 of seed 0's 30 search errors but only 1 of its 166 model errors. Why can no "
            "search fix a model error?",
            "A model error means the model scores the wrong output above the right one; any search that maximises "
            "that score returns the wrong output, so only a better model (more data, more training, a better "
            "architecture) helps. A search error is the opposite: the right output scores higher, but greedy or a "
            "narrow beam never reached it."),
           ],
    "08": [("A decoder-only model is the encoder layer plus a causal mask. What exactly can it no longer do that the "
            "encoder could, and why is that the price of generating text?",
            "No position sees the tokens after it, so it cannot use the right context: fill a blank in the middle "
            "from both sides as the masked-LM does, or represent a word by what follows it. It is the price of "
            "generation because at generation time the future does not exist; training with the mask makes every "
            "position an honest next-token prediction."),
           ("The count models are strong baselines. What does the Transformer see that a trigram cannot, and on "
            "which sentences would you expect the gap to be largest?",
            "Its whole context up to `max_len`, not the last two tokens, and embeddings that share what it learned "
            "between similar tokens, so it can score n-grams it never counted. The gap should be largest where the "
            "next token depends on words further back and on text unlike the training documentation — prose from "
            "other packages, where counted n-grams help less (section 4 measures it)."),
           ],
    "09": [("GQA shrinks the KV cache but barely changes the loss here. When is the cache, not the compute, the "
            "bottleneck of serving a model?",
            "When generating: every new token reads the whole cache from memory for one token's worth of "
            "arithmetic, so long contexts and large batches make generation memory-bound, and the cache's size "
            "limits how many sequences fit on a GPU at once. Training processes all positions in parallel and is "
            "limited by compute instead."),
           ("An ablation calls a change an improvement only beyond noise. How many seeds would you need to trust "
            "a 0.01-nat difference, and what else besides seeds could make a swap look better?",
            "Enough that twice the standard error of the paired difference is below 0.01: $n \\ge (2s/0.01)^2$ "
            "for a seed-to-seed standard deviation $s$ of the difference — 4 seeds if $s = 0.01$, 16 if "
            "$s = 0.02$. Besides seeds: a learning rate or budget tuned for one variant only (a swap that learns "
            "faster early can lose later), different parameter counts, one evaluation split, one data order."),
           ],
    "10": [("Each process averages the loss over its own tokens, then the gradients are averaged. When does that "
            "differ from one process averaging over all tokens, and how does §3 fix it?",
            "Whenever the ranks hold different numbers of target tokens (padding, sentences of different length): "
            "the mean of per-rank means weighs a token on a rank with few tokens more. §3 all-reduces the token "
            "count $T$ first, and each rank backpropagates $\\frac{N}{T}\\sum_{t\\in B_r}\\ell_t$, so DDP's "
            "average over ranks is the mean over all tokens."),
           ("Gradient checkpointing trades compute for memory. Looking at what §7 measures, when is the trade "
            "worth it?",
            "When activation memory is the limit — long sequences, large batches, deep models — and the "
            "alternative is a smaller batch or a model that does not fit. It costs roughly one more forward pass "
            "per step; for the course's small models on a CPU there is memory to spare, so it only costs time."),
           ],
    "11": [("Why does the fine-tuning loss skip the prompt tokens, and what did the lesson measure when it did not?",
            "The model should learn to produce answers, not questions; scoring the prompt spends part of the fitting "
            "on predicting the user's text. The lesson measured it on held-out modules over three seeds: the choice "
            "tests did not change, the loss on the right answers rose from 2.088 to 2.134 nats per token."),
           ("DPO's held-out preference accuracy rose 4 points over SFT. Why did its knowledge test and chrF not move?",
            "Its pairs put a right summary against a sentence that is no summary: they teach the form of an answer, "
            "which the form test measures, and say nothing about which summary fits which function."),
           ],
}


# ------------------------------------------------------------------------------------------------- questions

def _numbered_items(text: str) -> dict[int, str]:
    """``{1: "first item", …}``: the numbered list items of a markdown text, continuation lines joined (after a
    blank line only indented lines continue an item)."""
    items: dict[int, str] = {}
    current, after_blank = None, False
    for line in text.splitlines():
        match = ITEM.match(line)
        if match:
            current, after_blank = int(match.group(1)), False
            items[current] = match.group(2).strip()
        elif not line.strip():
            after_blank = True
        elif current is not None and (line.startswith(" ") or not after_blank) \
                and not line.lstrip().startswith(("#", "<")):
            items[current] += " " + line.strip()
        else:
            current = None
    return items


def lesson_questions(notebook) -> list[tuple[str, str | None]]:
    """``(question, model answer or None)`` for each numbered question under the lesson's "## Check your
    understanding" or "## Why?" heading, paired by number with the items of the ``<details><summary>Answers``
    cell that follows."""
    markdown = [cell.source for cell in notebook.cells if cell.cell_type == "markdown"]
    for index, text in enumerate(markdown):
        heading = QUESTION_HEADING.search(text)
        if not heading:
            continue
        rest = text[heading.end():]
        questions_text = rest.split("\n## ")[0]
        answers_text = next((t for t in [rest, *markdown[index + 1:]] if ANSWERS.search(t)), "")
        if answers_text:
            answers_text = answers_text[ANSWERS.search(answers_text).end():].split("</details>")[0]
        questions, answers = _numbered_items(questions_text.split("<details")[0]), _numbered_items(answers_text)
        return [(question, answers.get(number)) for number, question in questions.items()] + [
            (f"(no question {number})", answer) for number, answer in answers.items() if number not in questions]
    return []


def unanswered(notebook) -> list[str]:
    """The lesson's questions without a model answer (and answers without a question), for the build to report."""
    return [question for question, answer in lesson_questions(notebook) if not answer or
            question.startswith("(no question")]


# ---------------------------------------------------------------------------------------------------- plans

@dataclass
class Section:
    heading: str
    minutes: float = 0.0  # the rule's minutes for its prose, code and run time (exercise cells left out)
    code_cells: int = 0
    gpu_code_cells: int = 0

    @property
    def gpu_only(self) -> bool:
        return self.code_cells > 0 and self.gpu_code_cells == self.code_cells


@dataclass
class Sitting:
    number: int
    minutes: int  # the rule's estimate for a learner working alone
    rows: list[tuple[int, str]] = field(default_factory=list)  # the 90-minute class, summing to PLAN_MINUTES
    homework: list[tuple[int, str]] = field(default_factory=list)  # outside the class: (minutes, what)


def gpu_only_cell(source: str) -> bool:
    """True for a code cell that does nothing without a GPU: its statements are definitions, imports and ``if``
    blocks on ``torch.cuda.is_available()``, at least one of them such a block."""
    tree = parse_cell(source)
    if tree is None:
        return False
    gated = [s for s in tree.body if isinstance(s, ast.If) and "cuda.is_available()" in ast.unparse(s.test)]
    inert = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Import, ast.ImportFrom)
    return bool(gated) and all(isinstance(s, inert) or s in gated for s in tree.body)


def _exercise_cells(cells) -> set[int]:
    """Indices (in ``cells``) of the cells of an exercise: from its task (a markdown cell starting ``**Exercise`` or
    ``**Capstone``) to its ``qN.check()`` cell, and any other cell that binds or checks an exercise."""
    found, inside = set(), False
    for index, cell in enumerate(cells):
        if cell.cell_type == "markdown" and re.match(r"\s*\*\*(Exercise|Capstone)", cell.source):
            inside = True
        checks = cell.cell_type == "code" and bool(RULE.CHECK_CALL.search(cell.source))
        if inside or checks or (cell.cell_type == "code" and ".bind(globals())" in cell.source):
            found.add(index)
        if checks:
            inside = False
    return found


def _sections(cells) -> list[Section]:
    """The ``##`` sections among ``cells`` (a sitting); cells before the first heading of a later sitting continue
    the section the break interrupted. Break cells and exercise cells do not count."""
    sections: list[Section] = []
    exercise_cells = _exercise_cells(cells)
    for index, cell in enumerate(cells):
        if RULE.is_break(cell):
            continue
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    sections.append(Section(line[3:].strip()))
        if not sections or index in exercise_cells:
            continue
        if cell.cell_type == "markdown":
            sections[-1].minutes += len(cell.source.split()) / RULE.WORDS_PER_MINUTE
        elif cell.cell_type == "code":
            lines = sum(1 for line in cell.source.splitlines() if line.strip())
            sections[-1].minutes += lines / RULE.CODE_LINES_PER_MINUTE + (RULE.run_seconds(cell) or 0) / 60
            sections[-1].code_cells += 1
            sections[-1].gpu_code_cells += gpu_only_cell(cell.source)
    return [s for s in sections if not s.heading.startswith(CLOSING_SECTIONS) and "exercise" not in s.heading.lower()]


def _exercise_sittings(notebook, keys) -> dict[str, int]:
    """``{"q1": 0, …}``: the sitting (0-based) of each exercise's first ``qN.check()`` call, as the rule counts it."""
    found: dict[str, int] = {}
    for number, cells in enumerate(RULE.sittings(notebook)):
        for cell in cells:
            if cell.cell_type == "code":
                for key in RULE.CHECK_CALL.findall(cell.source):
                    found.setdefault(key, number)
    return {key: found.get(key, len(RULE.sittings(notebook)) - 1) for key in keys}


def _share(total: int, weights: list[float], minimum: list[int]) -> list[int]:
    """Whole minutes, at least ``minimum`` each, summing to ``total``, the rest in proportion to ``weights``."""
    spare = total - sum(minimum)
    shares = [spare * w / (sum(weights) or 1) for w in weights]
    minutes = [m + int(share) for m, share in zip(minimum, shares)]
    by_remainder = sorted(range(len(shares)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in by_remainder[:total - sum(minutes)]:  # whole minutes that add up exactly (largest remainders)
        minutes[i] += 1
    return minutes


def _capstone(key: str, exercise) -> str:
    name = exercise.name.removeprefix("Capstone:").strip()
    return f"Capstone {key} · {name}"


def ninety_minute_plans(notebook) -> list[Sitting]:
    """One 90-minute class per sitting of the lesson (the rows sum to :data:`PLAN_MINUTES`), with the capstones
    that do not fit given as homework."""
    lesson = notebook_lesson(notebook)
    exercises = lesson_exercises(lesson)
    where = _exercise_sittings(notebook, exercises)
    estimate = RULE.estimate(notebook)
    parts = RULE.sittings(notebook)
    seconds_before = 0.0
    plans = []
    for number, cells in enumerate(parts):
        last = number == len(parts) - 1
        sections = _sections(cells)
        mine = [key for key in exercises if where[key] == number]
        small = [key for key in mine if not getattr(exercises[key], "task", "")]
        capstones = [key for key in mine if getattr(exercises[key], "task", "")]
        fixed = OPENING_MINUTES + WRAP_UP_MINUTES + MINUTES_PER_EXERCISE * len(small)
        teaching_floor = sum(GPU_ONLY_MINUTES if s.gpu_only else MIN_SECTION_MINUTES for s in sections)
        # the sections need at least half of what the rule gives them, and never less than their floor
        teaching_need = max(teaching_floor, round(sum(s.minutes for s in sections if not s.gpu_only) / 2))
        in_class = []
        for key in capstones:
            if PLAN_MINUTES - fixed - MINUTES_PER_CAPSTONE * (len(in_class) + 1) >= teaching_need:
                in_class.append(key)
        teaching = PLAN_MINUTES - fixed - MINUTES_PER_CAPSTONE * len(in_class)
        sitting = Sitting(number + 1, estimate["sittings"][number]["minutes"])
        if number == 0:
            sitting.rows.append((OPENING_MINUTES, "Opening: the objectives at the top of the notebook; what the "
                                                  "class remembers from the previous lesson"))
        else:
            sitting.rows.append((OPENING_MINUTES, "Opening: the recap in the break cell; learners who closed the "
                                                  "notebook run every cell above it first (it computed for "
                                                  f"{RULE._running(seconds_before / 60)})"))
        if sections:
            flexible = [s for s in sections if not s.gpu_only]
            gpu_minutes = GPU_ONLY_MINUTES * (len(sections) - len(flexible))
            shares = iter(_share(teaching - gpu_minutes, [s.minutes for s in flexible],
                                 [MIN_SECTION_MINUTES] * len(flexible)))
            for section in sections:
                if section.gpu_only:
                    sitting.rows.append((GPU_ONLY_MINUTES, f"§ {section.heading} — GPU only: on a CPU its cell "
                                                           "prints that it skipped; read the idea, run nothing"))
                else:
                    sitting.rows.append((next(shares), f"§ {section.heading}"))
            spare = 0
        else:
            spare = teaching
        if small:
            sitting.rows.append((MINUTES_PER_EXERCISE * len(small),
                                 f"Exercises {', '.join(small)} ({MINUTES_PER_EXERCISE} min each), in pairs; learners "
                                 "run `qN.check()` and read the feedback before asking"))
        for key in in_class:
            sitting.rows.append((MINUTES_PER_CAPSTONE, f"{_capstone(key, exercises[key])}, in class"))
        wrap = ("Wrap-up: the summary table, common errors, the lesson's questions (model answers below)" if last
                else "Wrap-up: the break cell's recap; what the next sitting does")
        if spare:
            wrap += "; time to finish the exercises and compare answers"
        sitting.rows.append((PLAN_MINUTES - sum(m for m, _ in sitting.rows), wrap))
        sitting.homework = [(MINUTES_PER_CAPSTONE, _capstone(key, exercises[key]))
                            for key in capstones if key not in in_class]
        seconds_before += sum(RULE.run_seconds(c) or 0 for c in cells if c.cell_type == "code")
        plans.append(sitting)
    return plans


# --------------------------------------------------------------------------------------------- misconceptions

def misconceptions(lesson: str) -> list[tuple[str, str, str]]:
    """``(exercise, mistake, message)`` for every typical mistake the lesson's exercises declare, in their order."""
    return [(key, mistake.name, mistake.message) for key, exercise in lesson_exercises(lesson).items()
            for mistake in getattr(exercise, "mistakes", ())]


# ------------------------------------------------------------------------------------------------------ notes

def lesson_title(notebook) -> str:
    return next((line[2:] for cell in notebook.cells if cell.cell_type == "markdown"
                 for line in cell.source.splitlines() if line.startswith("# ")), f"Lesson {notebook_lesson(notebook)}")


def teaching_notes(notebook) -> str:
    lesson = notebook_lesson(notebook)
    exercises = lesson_exercises(lesson)
    plans = ninety_minute_plans(notebook)
    minutes = RULE.estimate(notebook)["minutes"]
    count = {2: "two", 3: "three", 4: "four"}.get(len(plans), str(len(plans)))
    split = f", in {count} sittings of about " + " and ".join(f"{p.minutes}" for p in plans) + " minutes" \
        if len(plans) > 1 else ""
    lines = [f"# Teaching notes — {lesson_title(notebook)}", "",
             f"A learner working alone needs about {minutes} minutes{split} (the course's time rule: prose at "
             f"{RULE.WORDS_PER_MINUTE} words and code at {RULE.CODE_LINES_PER_MINUTE} lines a minute, "
             f"{MINUTES_PER_EXERCISE} minutes per small exercise, {MINUTES_PER_CAPSTONE} per capstone, plus the "
             "stored run time).", "",
             "## A 90-minute plan" + (" per sitting" if len(plans) > 1 else ""), "",
             f"After {OPENING_MINUTES} minutes of opening and {WRAP_UP_MINUTES} of wrap-up, each small exercise gets "
             f"{MINUTES_PER_EXERCISE} minutes and each capstone {MINUTES_PER_CAPSTONE}: in class where at least half "
             "of the sections' reading time is left, otherwise as homework. The sections share the rest in "
             f"proportion to their length (at least {MIN_SECTION_MINUTES} minutes each); a section whose code runs "
             f"only on a GPU gets {GPU_ONLY_MINUTES} minute of reading. Adjust it to your class.", ""]
    for plan in plans:
        if len(plans) > 1:
            lines += [f"### Sitting {plan.number} (about {plan.minutes} minutes for a learner alone)", ""]
        lines += ["| minutes | activity |", "|---:|---|"]
        lines += [f"| {m} | {activity} |" for m, activity in plan.rows]
        if plan.homework:
            lines += ["", "Homework (outside the 90 minutes): " + "; ".join(
                f"{what} (about {m} minutes)" for m, what in plan.homework) + "."]
        lines.append("")
    lines += ["## The exercises", ""]
    lines += [f"* `q{key[1:]}` — {exercise.name} (defines {', '.join(f'`{v}`' for v in exercise.variables)}). "
              f"Hint given to learners: {exercise.hint}" for key, exercise in exercises.items()]
    lines += ["", "## Misconceptions the checks catch", ""]
    found = misconceptions(lesson)
    if found:
        lines += ["The typical mistakes each exercise's check recognises, and what it tells the learner (declared "
                  "with the exercise; after grading a class, `grades.csv` shows which ones your learners met):", ""]
        lines += [f"* `{exercise}` — {mistake}: {message}" for exercise, mistake, message in found]
    else:
        lines.append("The exercises of this lesson declare no typical mistakes yet; after grading a class, "
                     "`grades.csv` shows which messages your learners met most.")
    lines += ["", "## The lesson's questions, with model answers", "",
              "The questions that end the notebook, with the answers it keeps folded under them:", ""]
    for number, (question, answer) in enumerate(lesson_questions(notebook), start=1):
        lines += [f"{number}. **{question}**", f"   *Answer.* {answer or '(no model answer in the notebook)'}"]
    missing = unanswered(notebook)
    if missing:
        lines += ["", "Without a model answer in the notebook: " + "; ".join(missing)]
    lines += ["", "## Discussion questions", "", "For the class, beyond the lesson's own questions:", ""]
    for number, (question, answer) in enumerate(DISCUSSION.get(lesson, []), start=1):
        lines += [f"{number}. **{question}**", f"   *Model answer.* {answer}"]
    return "\n".join(lines) + "\n"
