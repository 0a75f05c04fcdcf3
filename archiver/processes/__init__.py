"""``archiver crawl --processes N``: N crawler processes of one crawl (:mod:`archiver.run`
each), their private redis-server, and their figures added up as one crawl's.
"""
