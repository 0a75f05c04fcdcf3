"""A members' site behind a login: aiohttp on 127.0.0.1, port 0, every request logged.

How its login works, as many sites' do:

- ``GET /login``: a form (``form#login-form``: ``#username``, ``#password``, the button
  ``#login-button``, at fixed places on the page, so that a test can click them through a
  screencast), a CSRF token in a hidden field, tied to a ``pre`` cookie (HttpOnly) set with it;
- the form is sent by its script, not by the browser: ``fetch("/api/login")`` with a JSON body
  and the token in ``X-CSRF-Token``; the answer sets the session cookie ``sid`` (HttpOnly) and
  gives a token, which the script turns into the ``auth`` cookie (``document.cookie``) and
  keeps in ``localStorage["members-token"]``, then goes to ``/welcome``;
- ``/welcome``'s script makes the ``view`` cookie from localStorage (a localStorage-driven
  login), which the extra pages ``/members/extra/N`` need besides the session;
- a members' page (``/members/``, ``/members/page/N``) needs ``sid`` and ``auth`` of a live
  session; its script makes the ``feedkey`` cookie from localStorage and at once fetches
  ``/members/feed.json``, which needs it and lists the extra pages: only a crawl whose fetcher
  sends what the page's script just set gets the feed, and through it the extra pages (the
  script builds the feed's URL, so that no static extraction of scripts reads it as a link and
  asks for it first, without the cookie);
- without a session a members' URL redirects to ``/login?next=...`` (the login wall);
- ``/logout`` ends the session; ``/api/me`` answers 200 for a live session, else 401;
- ``expire_after``: the session ends after that many members' requests (a session expiry
  in the middle of a crawl).

The password is given by the test (made up there); the site knows the one user.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.cookies import SimpleCookie

from aiohttp import web

USER = "archivist"
PAGES = 6
EXTRAS = 3
MEMBERS_TEXT = "Minutes of the members' meeting"

LOGIN_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Log in</title>
<style>
body { margin: 0; font: 16px sans-serif; }
#login-form input, #login-form button { position: absolute; left: 40px; width: 300px;
  height: 36px; box-sizing: border-box; font: 16px sans-serif; }
#username { top: 100px; } #password { top: 160px; } #login-button { top: 220px; }
#message { position: absolute; left: 40px; top: 280px; }
</style></head>
<body>
<form id="login-form" autocomplete="off">
  <input id="username" name="username" aria-label="user name">
  <input id="password" name="password" type="password" aria-label="password">
  <input type="hidden" id="csrf" name="csrf" value="%(csrf)s">
  <button id="login-button" type="submit">Log in</button>
</form>
<p id="message"></p>
<script>
document.getElementById("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const answer = await fetch("/api/login", {
    method: "POST",
    headers: {"Content-Type": "application/json",
              "X-CSRF-Token": document.getElementById("csrf").value},
    body: JSON.stringify({username: document.getElementById("username").value,
                          password: document.getElementById("password").value}),
  });
  if (!answer.ok) {
    document.getElementById("message").textContent = "Wrong user name or password";
    return;
  }
  const data = await answer.json();
  document.cookie = "auth=" + data.token + "; path=/";
  localStorage.setItem("members-token", data.token);
  location.href = "/welcome";
});
</script>
</body></html>
"""

WELCOME = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Welcome</title></head>
<body><h1>Welcome, %(user)s</h1>
<p><a href="/members/">The members' area</a></p>
<script>
document.cookie = "view=" + localStorage.getItem("members-token") + "; path=/";
const done = document.createElement("p");
done.id = "members-welcome";
done.textContent = "Ready.";
document.body.append(done);
</script></body></html>
"""

MEMBERS_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Members' page %(number)s</title></head>
<body><h1>Members' page %(number)s</h1>
<p>%(text)s, number %(number)s.</p>
<nav>%(links)s <a href="/logout">Log out</a></nav>
<ul id="extras"></ul>
<script>
(async () => {
  const token = localStorage.getItem("members-token");
  if (!token) return;
  document.cookie = "feedkey=f-" + token + "; path=/members";
  // built, not written out: a static crawl reads quoted paths in scripts as links
  const feed = await (await fetch(location.origin + "/members/" + "feed.json")).json();
  for (const path of feed.extras) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = path;
    link.textContent = path;
    item.append(link);
    document.getElementById("extras").append(item);
  }
  document.title += " (feed read)";
})();
</script>
</body></html>
"""

EXTRA_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Extra %(number)s</title></head>
<body><h1>Extra %(number)s</h1><p>Only for readers whose script made the view cookie.</p>
</body></html>
"""

HOME = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Society</title></head>
<body><h1>The Society</h1><p><a href="/login">Log in</a> <a href="/members/">Members</a></p>
</body></html>
"""


@dataclass
class Hit:
    method: str
    path: str
    cookies: dict[str, str]
    query: str = ""
    status: int = 0


@dataclass
class Session:
    token: str
    requests: int = 0


@dataclass
class LoginSite:
    """The members' site; ``async with LoginSite(password=...) as site``."""

    password: str
    expire_after: int | None = None
    log: list[Hit] = field(default_factory=list)
    sessions: dict[str, Session] = field(default_factory=dict)
    logins: int = 0
    #: the user name of every login attempt
    attempts: list[str] = field(default_factory=list)
    port: int = 0
    _csrf: dict[str, str] = field(default_factory=dict)
    _runner: web.AppRunner | None = None

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def members_paths(self) -> list[str]:
        return ["/members/", *(f"/members/page/{n}" for n in range(1, PAGES + 1))]

    def extra_paths(self) -> list[str]:
        return [f"/members/extra/{n}" for n in range(1, EXTRAS + 1)]

    def served(self, path: str, status: int = 200) -> int:
        """How many times ``path`` was answered with ``status``."""
        return sum(1 for hit in self.log if hit.path == path and hit.status == status)

    def end_sessions(self) -> None:
        self.sessions.clear()

    async def __aenter__(self) -> LoginSite:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._dispatch)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()
        self.port = self._runner.addresses[0][1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    @contextlib.contextmanager
    def running_in_thread(self) -> Iterator[LoginSite]:
        """Serve from a thread with its own event loop (for commands run as subprocesses by
        a test that blocks while they run)."""
        started = threading.Event()
        loop = asyncio.new_event_loop()
        stop = loop.create_future()

        async def main() -> None:
            async with self:
                started.set()
                await stop

        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
        thread.start()
        assert started.wait(30), "the login site did not start"
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(stop.set_result, None)
            thread.join(30)
            loop.close()

    async def _dispatch(self, request: web.Request) -> web.StreamResponse:
        cookies = _cookies(request)
        hit = Hit(request.method, request.path, cookies, request.query_string)
        self.log.append(hit)
        response = await self._respond(request, cookies)
        hit.status = response.status
        return response

    async def _respond(self, request: web.Request, cookies: dict[str, str]) -> web.StreamResponse:
        path = request.path
        if path == "/":
            return _html(HOME)
        if path == "/login":
            return self._login_page()
        if path == "/api/login" and request.method == "POST":
            return await self._log_in(request, cookies)
        if path == "/api/me":
            session = self._session(cookies)
            if session is None:
                return web.json_response({"error": "not logged in"}, status=401)
            return web.json_response({"user": USER})
        if path == "/logout":
            self.sessions.pop(cookies.get("sid", ""), None)
            return web.Response(status=302, headers={"Location": "/"})
        if path == "/welcome":
            if self._session(cookies) is None:
                return _to_login(request)
            return _html(WELCOME % {"user": USER})
        if path.startswith("/members/"):
            return self._members(request, cookies)
        return web.Response(status=404, text="not found")

    def _login_page(self) -> web.Response:
        pre, csrf = secrets.token_urlsafe(12), secrets.token_urlsafe(12)
        self._csrf[pre] = csrf
        response = _html(LOGIN_PAGE % {"csrf": csrf})
        response.headers["Set-Cookie"] = f"pre={pre}; HttpOnly; Path=/; SameSite=Lax"
        return response

    async def _log_in(self, request: web.Request, cookies: dict[str, str]) -> web.Response:
        expected = self._csrf.get(cookies.get("pre", ""))
        if expected is None or request.headers.get("X-CSRF-Token") != expected:
            return web.json_response({"error": "CSRF token missing or wrong"}, status=403)
        try:
            form = json.loads(await request.read())
        except ValueError:
            return web.json_response({"error": "not JSON"}, status=400)
        self.attempts.append(str(form.get("username")))
        if form.get("username") != USER or form.get("password") != self.password:
            return web.json_response({"error": "wrong user name or password"}, status=403)
        sid, token = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
        self.sessions[sid] = Session(token)
        self.logins += 1
        response = web.json_response({"token": token})
        response.headers["Set-Cookie"] = f"sid={sid}; HttpOnly; Path=/; SameSite=Lax"
        return response

    def _session(self, cookies: dict[str, str]) -> Session | None:
        session = self.sessions.get(cookies.get("sid", ""))
        if session is None or cookies.get("auth") != session.token:
            return None
        return session

    def _members(self, request: web.Request, cookies: dict[str, str]) -> web.StreamResponse:
        session = self._session(cookies)
        if session is None:
            return _to_login(request)
        session.requests += 1
        if self.expire_after is not None and session.requests > self.expire_after:
            self.sessions = {k: v for k, v in self.sessions.items() if v is not session}
            return _to_login(request)
        path = request.path
        viewing = cookies.get("view") == session.token
        if path == "/members/feed.json":
            if cookies.get("feedkey") != "f-" + session.token:
                return web.json_response({"error": "no feedkey cookie"}, status=403)
            return web.json_response({"extras": self.extra_paths()})
        if path.startswith("/members/extra/"):
            if not viewing:
                return web.Response(status=403, text="no view cookie")
            return _html(EXTRA_PAGE % {"number": path.rsplit("/", 1)[1]})
        pages = self.members_paths()
        if path not in pages:
            return web.Response(status=404, text="not found")
        number = pages.index(path)
        links = " ".join(f'<a href="{other}">{other}</a>' for other in pages if other != path)
        return _html(MEMBERS_PAGE % {"number": number, "text": MEMBERS_TEXT, "links": links})


def _cookies(request: web.Request) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    for header in request.headers.getall("Cookie", []):
        jar.load(header)
    return {name: morsel.value for name, morsel in jar.items()}


def _html(text: str) -> web.Response:
    return web.Response(text=text, content_type="text/html", charset="utf-8")


def _to_login(request: web.Request) -> web.Response:
    return web.Response(status=302, headers={"Location": f"/login?next={request.path}"})


__all__ = ["EXTRAS", "MEMBERS_TEXT", "PAGES", "USER", "Hit", "LoginSite"]
