"""Plain-Python core: discovery, detection, safe execution, approval, context, tools.

Nothing in here imports IPython or ipywidgets.
"""
