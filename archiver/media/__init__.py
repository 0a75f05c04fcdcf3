"""Media a page plays, resolved by yt-dlp (``--media yt-dlp``) in child processes that have no
network of their own: :mod:`.resolver` (the children and their protocol, each request handed to
the caller), :mod:`.ytdlpchild` (the script they run: the only importer of yt-dlp),
:mod:`.formats` (the URLs to fetch from what yt-dlp resolved). It knows neither the fetcher nor
the writer: :mod:`archiver.pipeline.media` gives it a function that captures each request."""
