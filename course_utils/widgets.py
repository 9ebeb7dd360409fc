"""Interactive explorers (ipywidgets). Each one also draws its default view once, so a stored notebook keeps a
static picture even where widgets do not render (GitHub, nbval, PDF)."""
from __future__ import annotations
