"""One HTTP exchange, its bytes captured as they crossed the connection: the only code that uses
aiohttp's client.
"""
