"""A tiny Pareto front."""
points = [(1, 5), (2, 3), (3, 4), (4, 1)]
front = [p for p in points if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in points)]
print(f"pareto front: {front}")
