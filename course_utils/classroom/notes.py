"""Teaching notes for one lesson, generated from the notebook and the mistake catalogue where the data allows.

* the **90-minute plan** gives each section of the notebook time in proportion to its length (words of prose and
  code cells), after fixed slots for the opening, the exercises and the wrap-up;
* the **misconceptions** are the checker's diagnoses of the catalogued typical wrong answers
  (``tests/mistakes``), most often reached first;
* the **discussion questions** are written by hand, one set per lesson (:data:`DISCUSSION`).
"""
from __future__ import annotations

import importlib.util
import re
import sys
from collections import Counter
from pathlib import Path

from .cells import lesson_exercises, notebook_lesson

PLAN_MINUTES, OPENING_MINUTES, WRAP_UP_MINUTES, MINUTES_PER_EXERCISE, MIN_SECTION_MINUTES = 90, 5, 10, 7, 2
CATALOGUE = Path(__file__).resolve().parents[2] / "tests" / "mistakes"

DISCUSSION = {
    "00": ["Two runs of the same notebook give different numbers. List everything that could differ, and which "
           "of those `seed_everything` removes.",
           "Why does the course check its environment before teaching anything? What would a version mismatch "
           "look like in lesson 05?",
           "When can more CPU threads make a run slower? Compare with what §3 measures on your machine."],
    "01": ["A character tokenizer never meets an unknown word. Why do real models still use subwords?",
           "BPE works on bytes, not characters. What does that buy for Chinese or emoji, and what does it cost in "
           "sequence length?",
           "Why multiply the embedding by √d_model before adding positions, and what would go wrong without it?"],
    "02": ["Self-attention without positions is order-blind. Which tasks would still work without any "
           "positional information?",
           "A shift of k positions is the same rotation for every position. Why does that help a model learn "
           "relative order?",
           "When would you choose a learned positional table over the sinusoidal one, and what happens past "
           "max_len for each?"],
    "03": ["Why divide the scores by √d_k and not by d_k? Use the variance measurement from the notebook.",
           "A fully masked query row gives NaN with −∞. Where in a real batch does such a row occur?",
           "Attention costs O(n²) in the sequence length. What does that mean for a 10× longer document, in time "
           "and in memory?"],
    "04": ["Residual connections are called a gradient highway. What does the gradient measurement in §2 show "
           "without them?",
           "Why does a Transformer use LayerNorm rather than BatchNorm? Think of padding and of batch size 1.",
           "§4 trains Post-LN and Pre-LN at a high learning rate without warmup. Which one coped, and why might "
           "the original paper still have used Post-LN?"],
    "05": ["A classifier reaches the majority-class accuracy. How do you tell whether it learned anything?",
           "Mean pooling with or without the padding mask: why does the mask matter for short sentences?",
           "Which baseline in the notebook was hardest to beat, and what does that say about the task?"],
    "06": ["BERT replaces 10 % of the selected tokens with random ones and leaves 10 % unchanged. Why not always "
           "use [MASK]?",
           "Why compare masked-token accuracy with a unigram baseline rather than report it alone?",
           "Tying the output layer to the embedding saves parameters. What else might it change?"],
    "07": ["Teacher forcing feeds the true previous token during training. What goes wrong at inference time, "
           "and how does beam search help?",
           "The KV cache gives identical output, faster. What exactly is cached, and why is it safe to reuse?",
           "Cross-attention heatmaps look like alignments. When would reading them as explanations mislead you?"],
    "10": ["Each process averages the loss over its own tokens, then the gradients are averaged. When does that "
           "differ from one process averaging over all tokens, and how does §2 fix it?",
           "Gradient accumulation gives the gradient of a bigger batch. What does it not give you that more "
           "hardware would?",
           "Gradient checkpointing trades compute for memory. Looking at what §5 measures, when is the trade worth "
           "it?"],
}


def _sections(notebook) -> list[tuple[str, int, int]]:
    """``(heading, words of prose, code cells)`` for each ``##`` section of the notebook."""
    sections: list[list] = []
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("## "):
                    sections.append([line[3:].strip(), 0, 0])
            if sections:
                sections[-1][1] += len(re.findall(r"\w+", cell.source))
        elif cell.cell_type == "code" and sections:
            sections[-1][2] += 1
    return [tuple(section) for section in sections]


def ninety_minute_plan(notebook) -> list[tuple[int, str]]:
    """``(minutes, activity)`` rows summing to 90."""
    n_exercises = len(lesson_exercises(notebook_lesson(notebook)))
    sections = [s for s in _sections(notebook) if s[0] not in ("Summary", "Common errors")
                and "exercise" not in s[0].lower()]
    exercise_minutes = MINUTES_PER_EXERCISE * n_exercises
    teaching = PLAN_MINUTES - OPENING_MINUTES - WRAP_UP_MINUTES - exercise_minutes
    weights = [words / 150 + code for _, words, code in sections]  # ≈ minutes to read + run
    spare = teaching - MIN_SECTION_MINUTES * len(sections)
    shares = [spare * w / (sum(weights) or 1) for w in weights]
    minutes = [MIN_SECTION_MINUTES + int(share) for share in shares]
    by_remainder = sorted(range(len(shares)), key=lambda i: shares[i] - int(shares[i]), reverse=True)
    for i in by_remainder[:teaching - sum(minutes)]:  # whole minutes that add up exactly (largest remainders)
        minutes[i] += 1
    plan = [(OPENING_MINUTES, "Opening: the objectives at the top of the notebook; what the class remembers from "
                              "the previous lesson")]
    plan += [(m, f"§ {heading}") for m, (heading, _, _) in zip(minutes, sections)]
    plan.append((exercise_minutes, f"Exercises ({n_exercises}), in pairs; learners run `qN.check()` and read the "
                                   "feedback before asking"))
    plan.append((PLAN_MINUTES - sum(m for m, _ in plan), "Wrap-up: the summary table, common errors, one "
                                                         "discussion question"))
    return plan


def _load_catalogue():
    """The mistake catalogue (``tests/mistakes``) of this checkout, or ``None`` where it is not shipped."""
    if not (CATALOGUE / "__init__.py").exists():
        return None
    spec = importlib.util.spec_from_file_location("mistakes", CATALOGUE / "__init__.py",
                                                  submodule_search_locations=[str(CATALOGUE)])
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mistakes", module)
    spec.loader.exec_module(module)
    return module


def misconceptions(lesson: str) -> list[tuple[str, str, int]]:
    """``(exercise, diagnosis, how many catalogued wrong answers get it)``, most frequent first."""
    catalogue = _load_catalogue()
    if catalogue is None:
        return []
    exercises = lesson_exercises(lesson)
    counts: Counter = Counter()
    for mistake in catalogue.all_mistakes():
        if mistake.lesson == f"lesson{lesson}" and mistake.exercise in exercises:
            result = exercises[mistake.exercise].evaluate_code(mistake.code, mistake.prelude)
            counts[(mistake.exercise, result.message.split(". ")[0])] += 1
    return [(exercise, diagnosis, n) for (exercise, diagnosis), n in counts.most_common()]


def teaching_notes(notebook) -> str:
    lesson = notebook_lesson(notebook)
    title = next((line[2:] for cell in notebook.cells if cell.cell_type == "markdown"
                  for line in cell.source.splitlines() if line.startswith("# ")), f"Lesson {lesson}")
    exercises = lesson_exercises(lesson)
    lines = [f"# Teaching notes — {title}", "",
             "## A 90-minute plan", "",
             "Each section gets time in proportion to its length in the notebook (words of prose, code cells), "
             f"at least {MIN_SECTION_MINUTES} minutes, after {OPENING_MINUTES} minutes of opening, "
             f"{MINUTES_PER_EXERCISE} per exercise and {WRAP_UP_MINUTES} of wrap-up. Adjust it to your class.", "",
             "| minutes | activity |", "|---:|---|"]
    lines += [f"| {minutes} | {activity} |" for minutes, activity in ninety_minute_plan(notebook)]
    lines += ["", "## The exercises", ""]
    lines += [f"* `q{key[1:]}` — {exercise.name} (defines {', '.join(f'`{v}`' for v in exercise.variables)}). "
              f"Hint given to learners: {exercise.hint}" for key, exercise in exercises.items()]
    lines += ["", "## Misconceptions the checks catch most", ""]
    found = misconceptions(lesson)
    if found:
        lines += ["How many of the catalogued typical wrong answers lead to each diagnosis (from the course's "
                  "mistake catalogue, not from a class):", ""]
        lines += [f"* `{exercise}` ({n}×): {diagnosis}" for exercise, diagnosis, n in found]
    else:
        lines.append("The mistake catalogue has no entries for this lesson yet; after grading a class, "
                     "`grades.csv` shows which messages your learners met most.")
    lines += ["", "## Discussion questions", ""]
    lines += [f"{number}. {question}" for number, question in enumerate(DISCUSSION.get(lesson, []), start=1)]
    return "\n".join(lines) + "\n"
