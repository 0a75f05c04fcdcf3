"""One crawl run: wiring the stages together, the workers, the lease pipeline, the output
directory, resume, logs and statistics.
"""
