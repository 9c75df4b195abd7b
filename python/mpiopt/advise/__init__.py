"""`mpiopt advise`: a user's program taken through every tool (profile, drop-in, placement,
transformation), each step measured against the one before it on the user's own program.

launches.py  starts one run of a variant (baseline, drop-in, …) and reads what it left
measure.py   medians, spreads, verdicts and the output check
steps.py     what each step prepares (profile summary, placement, transformed build)
output.py    the terminal table, Markdown, HTML, JSON and the plots
"""
