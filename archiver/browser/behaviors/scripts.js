// archiver's runtime for user behaviours written against the Browsertrix Behaviors API
// (https://crawler.docs.browsertrix.com/user-guide/behaviors/), written for archiver from that
// documentation. Evaluated in the page's own world before the user's files:
//
// - the functions a behaviour bundle calls on the crawler (self.__bx_addLink, __bx_fetch,
//   __bx_log, __bx_addSet, __bx_contentCheckFailed) record into self.__archiverScripts, which
//   archiver reads while the behaviour runs;
// - MANAGER (below, run after any bundle the user gave) defines self.__bx_behaviors when no
//   bundle did: load(cls), init(opts), run(), running the first loaded class whose isMatch() is
//   true, with ctx = {Lib, state, opts, log}.
(() => {
  if (self.__archiverScripts) return;
  const state = self.__archiverScripts = {
    links: [], log: [], steps: 0, done: false, stop: false, error: "", ran: "", seen: new Set(),
  };
  const keep = (list, value, limit) => { if (list.length < limit) list.push(value); };
  const text = (value) => {
    if (typeof value === "string") return value;
    try { return JSON.stringify(value); } catch (e) { return String(value); }
  };
  self.__bx_addLink = async (url) => {
    try { keep(state.links, new URL(String(url), location.href).href, 5000); } catch (e) {}
  };
  self.__bx_fetch = async (url) => {
    try { await fetch(new URL(String(url), location.href).href); return true; } catch (e) { return false; }
  };
  self.__bx_log = async (entry) => {
    const data = entry && typeof entry === "object" && "data" in entry ? entry.data : entry;
    keep(state.log, text(data).slice(0, 300), 50);
  };
  self.__bx_addSet = async (key) => {
    const name = String(key);
    if (state.seen.has(name)) return false;
    state.seen.add(name);
    return true;
  };
  self.__bx_contentCheckFailed = async (reason) => {
    keep(state.log, "content check failed: " + text(reason).slice(0, 200), 50);
  };
})();
//MANAGER
(() => {
  if (self.__bx_behaviors) return;
  const state = self.__archiverScripts;
  const waitUnit = 200;
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
  const xpathNode = (path, root = document) =>
    document.evaluate(path, root, null, XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue;
  function* xpathNodes(path, root = document) {
    const found = document.evaluate(path, root, null, XPathResult.ORDERED_NODE_SNAPSHOT_TYPE, null);
    for (let i = 0; i < found.snapshotLength; i++) yield found.snapshotItem(i);
  }
  const xpathString = (path, root = document) =>
    document.evaluate(path, root, null, XPathResult.STRING_TYPE, null).stringValue;
  const waitUntil = async (predicate, interval = waitUnit) => {
    while (!predicate() && !state.stop) await sleep(interval);
  };
  const waitUntilNode = async (path, root = document, old = null, timeout = 1000, interval = waitUnit) => {
    const end = Date.now() + timeout;
    for (;;) {
      const node = xpathNode(path, root);
      if (node && node !== old) return node;
      if (Date.now() >= end || state.stop) return null;
      await sleep(interval);
    }
  };
  async function* iterChildElem(parent, timeout = 1000, totalTimeout = 60000) {
    const end = Date.now() + totalTimeout;
    let child = parent.firstElementChild;
    while (child && !state.stop) {
      yield child;
      let next = child.nextElementSibling;
      const wait = Date.now() + timeout;
      while (!next && Date.now() < wait && Date.now() < end && !state.stop) {
        await sleep(waitUnit);
        next = child.nextElementSibling;
      }
      child = next;
    }
  }
  async function* iterChildMatches(path, root = document, interval = waitUnit, timeout = 5000) {
    const done = new Set();
    let idle = Date.now() + timeout;
    while (Date.now() < idle && !state.stop) {
      let fresh = false;
      for (const node of xpathNodes(path, root)) {
        if (done.has(node)) continue;
        done.add(node);
        fresh = true;
        yield node;
      }
      if (fresh) idle = Date.now() + timeout;
      await sleep(interval);
    }
  }
  const isInViewport = (el) => {
    const box = el.getBoundingClientRect();
    return box.top >= 0 && box.left >= 0 && box.bottom <= innerHeight && box.right <= innerWidth;
  };
  const scrollToOffset = (el, offset = 0) => {
    scrollTo({top: el.getBoundingClientRect().top + scrollY - offset, behavior: "smooth"});
  };
  const scrollIntoView = (el, opts = {behavior: "smooth", block: "center", inline: "center"}) => {
    el.scrollIntoView(opts);
  };
  const scrollAndClick = async (el, interval = waitUnit, opts = undefined) => {
    scrollIntoView(el, opts);
    await sleep(interval);
    el.click();
  };
  const makeLib = (ctx) => {
    // getState(ctx, msg, counter) and getState(msg, counter): the counter (a key of ctx.state)
    // is incremented and {state, msg} returned
    const getState = (...args) => {
      const own = args.length && args[0] && typeof args[0] === "object" && "state" in args[0];
      const [target, msg, counter] = own ? args : [ctx, ...args];
      if (counter) target.state[counter] = (target.state[counter] || 0) + 1;
      return {state: target.state, msg: msg};
    };
    return {
      waitUnit, sleep, waitUntil, waitUntilNode, xpathNode, xpathNodes, xpathString,
      iterChildElem, iterChildMatches, isInViewport, scrollToOffset, scrollIntoView,
      scrollAndClick, getState,
      addLink: (url) => self.__bx_addLink(url),
      addToExternalSet: (key) => self.__bx_addSet(key),
      doExternalFetch: (url) => self.__bx_fetch(url),
      openWindow: (url) => self.__bx_addLink(url),
      behaviorLog: (data) => self.__bx_log(data),
      assertContentValid: (check, reason) => {
        let valid = false;
        try { valid = !!check(); } catch (e) {}
        if (!valid) self.__bx_contentCheckFailed(reason);
        return valid;
      },
    };
  };
  const classes = [];
  let options = {};
  self.__bx_behaviors = {
    load(cls) {
      if (typeof cls === "function" && !classes.includes(cls)) classes.push(cls);
    },
    init(opts = {}) { options = opts || {}; },
    async run() {
      const cls = classes.find((candidate) => {
        try { return typeof candidate.isMatch === "function" && !!candidate.isMatch(); }
        catch (e) { return false; }
      });
      if (!cls) return;
      state.ran = String(cls.id || cls.name || "behavior");
      const init = (typeof cls.init === "function" ? cls.init() : null) || {};
      const ctx = {state: init.state || {}, opts: init.opts || {}};
      ctx.log = (data) => self.__bx_log(data);
      ctx.Lib = makeLib(ctx);
      const behavior = new cls();
      if (typeof behavior.awaitPageLoad === "function") await behavior.awaitPageLoad(ctx);
      const steps = behavior.run(ctx);
      for await (const step of steps) {
        state.steps += 1;
        if (step !== undefined) self.__bx_log(step);
        if (state.stop) break;
      }
    },
  };
})();
