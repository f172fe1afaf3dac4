"""`make bench`: how fast jobsync notices a finished job, and what it costs, against the fixed 10-minute loop.

Kept free of imports: ``python -m bench.probe`` runs in a fresh process whose
memory and start-up it measures.
"""
