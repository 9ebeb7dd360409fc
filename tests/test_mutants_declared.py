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


@pytest.mark.slow  # about 5 minutes on 2 cores: COURSE_SLOW_TESTS=1
def test_every_mutant_is_killed(capsys):
    """The whole mutation run: each planted bug makes a test fail (the kill rate is printed with the table)."""
    from tests.mutants import main

    code = main([])
    report = capsys.readouterr().out
    assert code == 0, report
    assert f"{len(MUTANTS)} of {len(MUTANTS)} mutants killed (100 %)" in report
