"""The panels' kernel part: the approval question's one model (summary.py), the side panel's
channel (channel.py) and what it answers (board.py). The Jupyter server part is
``skill_magics.server``; the frontend is labextension/."""
