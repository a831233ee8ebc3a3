"""The Skills side panel's kernel part: the channel (channel.py) and what it answers
(board.py). The Jupyter server part is ``skill_magics.server``; the frontend is labextension/."""
