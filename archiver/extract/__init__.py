"""What a fetched document leads to: links and requisites from HTML and CSS, and content
decoding.
"""
