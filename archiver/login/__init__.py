"""Crawls behind a login: a session made once, by a person or a script, used by every crawl.

* :mod:`.profile`: the profile directory (its cookies and localStorage, mode 0700), written
  by a login and read by each crawl (``--profile``);
* :mod:`.script`: the login script file (``--login-script``): declarative steps, values
  from environment variables;
* :mod:`.session`: a login carried out in a browser that has the network to itself (a person
  at the login page archiver serves, or a script), and the profile it leaves.

Nothing of a login is recorded: its browser is not the crawl's, no request of it goes through
the crawl's fetcher or writer. What a crawl does with the session is elsewhere: the jar
(:mod:`archiver.fetch.cookies`), the browser's cookies kept in step with it
(:mod:`archiver.pipeline.cookiesync`), and the signs that the session ended
(:mod:`archiver.pipeline.session`).
"""
