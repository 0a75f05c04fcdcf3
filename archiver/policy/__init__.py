"""What may be fetched, and when: scope, robots.txt (RFC 9309), sitemaps, bot challenges, the SSRF
guard, credentials and per-host politeness.
"""
