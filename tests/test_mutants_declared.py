"""The mutation tests (``python -m tests.mutants``) stay plantable: a refactor that moves a mutant's text fails here."""
import pytest

from tests.mutants import MUTANTS, PACKAGE, ROOT, Mutant, MutantSetupError, check_declarations


def test_every_mutant_can_be_planted_in_the_current_package():
    check_declarations(MUTANTS, ROOT / PACKAGE)
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    assert all(m.original != m.replacement for m in MUTANTS)


def test_a_mutant_whose_text_is_gone_stops_the_run():
    gone = Mutant("renamed", "attention.py", "text that is not in the file", "x", ("tests/test_attention.py",))
    with pytest.raises(MutantSetupError, match="found 0 times"):
        check_declarations((gone,), ROOT / PACKAGE)
