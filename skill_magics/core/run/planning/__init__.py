"""Step 1, plan: resolve what would run and run every check before anyone is asked
(docs/architecture.md, *The run pipeline*): ``plan`` over ``checks``, the plan kinds
(``runplan``), the run settings, the arguments (``payload``, ``template``), the working
folder and the child's environment."""
