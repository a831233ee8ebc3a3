"""IPython/Jupyter layer: magics, approval UI, rendering. Thin: the work happens in core."""
