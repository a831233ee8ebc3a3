import json, sys; print(json.load(sys.stdin))
