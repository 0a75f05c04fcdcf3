"""``autoplay``: each ``<video>`` and ``<audio>`` played until its media is requested, then paused.

A media element loads little or nothing until it plays: ``preload="none"``, a player that sets
``src`` when play is pressed, a ``<source>`` list the browser picks from by type (HTML Standard
4.8.11.5, "resource selection algorithm"). So each element of the page is muted and played
(``HTMLMediaElement.play()``; a muted play needs no user gesture under Chromium's autoplay
policy), until it has data to play (``readyState`` ``HAVE_FUTURE_DATA``) or has played a little
(the first segments of a streaming player), until it fails, or for at most :data:`PLAY_WAIT`
seconds; then it is paused and the network let go quiet. The source the browser chose
(``currentSrc``) is reported: it is queued as a page requisite in case the element did not
request it within the wait. At most :data:`MAX_MEDIA` elements per page; elements in iframes are
not played.
"""

from __future__ import annotations

from archiver.browser.behaviors.control import (
    BehaviorOptions,
    BehaviorReport,
    PageControl,
    after_step,
)

#: The most media elements played per page.
MAX_MEDIA = 20
#: The longest one element is played, in seconds.
PLAY_WAIT = 4.0

# Play the next element not played yet; {src, state} once it has data, played, failed, or the
# wait is over, or null when none is left.
PLAY_NEXT = """(async () => {
  const wait = %d;
  const played = globalThis.__archiverPlayed || (globalThis.__archiverPlayed = new WeakSet());
  const media = [...document.querySelectorAll("video, audio")].find((el) => !played.has(el));
  if (!media) return null;
  played.add(media);
  media.muted = true;
  if (media.preload === "none") media.preload = "auto";
  let refused = "";
  try {
    const playing = media.play();
    if (playing && playing.catch) {
      playing.catch((error) => { refused = String(error && error.name); });
    }
  } catch (error) {
    refused = String(error && error.name);
  }
  const started = Date.now();
  await new Promise((resolve) => {
    const check = () => {
      const enough = media.readyState >= 3 || media.currentTime > 0.5 || media.ended;
      const failed = media.error || media.networkState === 3 || (refused && !media.currentSrc);
      if (enough || failed || Date.now() - started > wait) return resolve();
      setTimeout(check, 50);
    };
    check();
  });
  try { media.pause(); } catch (error) {}
  return {src: media.currentSrc || "", ready: media.readyState,
          error: media.error ? media.error.code : 0, refused: refused};
})()"""


async def autoplay(
    page: PageControl, until: float, report: BehaviorReport, options: BehaviorOptions
) -> None:
    """Play each media element until its media is requested (see the module docstring)."""
    for _element in range(MAX_MEDIA):
        left = until - page.now()
        if left <= 0:
            report.stopped = "time"
            return
        wait = min(PLAY_WAIT, left)
        played = await page.evaluate(PLAY_NEXT % int(wait * 1000), until=until)
        if not played:
            return
        report.steps += 1
        report.plays += 1
        source = str(played.get("src") or "")
        if source.startswith(("http://", "https://")) and source not in report.sources:
            report.sources.append(source)
        await after_step(page, until)
    report.stopped = "steps"


__all__ = ["MAX_MEDIA", "PLAY_WAIT", "autoplay"]
