"""Plain-Python core: discovery, detection, safe execution, approval, context, tools.

Nothing in here imports IPython or ipywidgets.
"""

import logging

# Library convention: the application decides where log records go. Without this, Python's
# last-resort handler prints every audit WARNING raw on stderr, under the magic's own message.
logging.getLogger("skill_magics").addHandler(logging.NullHandler())
