"""One crawl run: its control (crawler, wiring, finish), the crawl directory (output, pages,
resume, jobs, control) and its logs and figures (log, heritrix, stats). One lease's pipeline
is :mod:`archiver.pipeline`; several processes of one crawl are :mod:`archiver.processes`.
"""
