"""One crawl run: building its stages (wiring), the workers (crawler), one lease's pipeline,
finishing (index, WACZ, summary), the output directory, resume, jobs, logs and statistics.
"""
