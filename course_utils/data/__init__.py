"""Real data sets made offline from files that pip-installed packages ship."""
