import sys

# A form is a text file; its "field:<name>" lines are the fillable fields.
with open(sys.argv[1], encoding="utf-8") as fh:
    names = [line[6:].strip() for line in fh if line.startswith("field:")]
if names:
    print(f"This form has {len(names)} fillable fields")
else:
    print("This form has no fillable fields: annotate it instead")
