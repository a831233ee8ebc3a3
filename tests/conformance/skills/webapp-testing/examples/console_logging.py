print("an example the agent reads, never a script of the skill")
