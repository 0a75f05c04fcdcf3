-- The SQLite frontier's tables (schema version 1: database.SCHEMA_VERSION), the per-URL states
-- of urls.state are codec.py's. Statements are separated by semicolons, which appear nowhere
-- else in this file.
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS hosts (id INTEGER PRIMARY KEY, host TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS urls (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,          -- the seen set
    host INTEGER NOT NULL,             -- hosts.id (archiver.urls.host_port)
    state INTEGER NOT NULL,
    seq INTEGER NOT NULL,              -- FIFO order within the host (a retry gets a new one)
    tries INTEGER NOT NULL,
    redirects_left INTEGER NOT NULL,
    depth INTEGER NOT NULL,
    hops TEXT NOT NULL,
    via TEXT,
    not_before REAL,                   -- WAITING: wall-clock time the retry is due
    status INTEGER,
    reason TEXT,
    extra INTEGER NOT NULL DEFAULT 0,  -- pages outside the scope since the last one inside
    found_by TEXT NOT NULL DEFAULT '', -- the extractor that found the URL
    page TEXT NOT NULL DEFAULT '',     -- a requisite's page, when it is not its via
    seed INTEGER NOT NULL DEFAULT 0    -- the seed whose rules judge it (0: the crawl's own)
);
-- the queue of each host in FIFO order: state 0 is QUEUED (codec.py)
CREATE INDEX IF NOT EXISTS urls_queue ON urls (host, seq) WHERE state = 0;
CREATE TABLE IF NOT EXISTS files (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS captures (
    file INTEGER NOT NULL,             -- files.id (the WARC's final name)
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    url INTEGER NOT NULL,              -- urls.id of the lease that committed it
    PRIMARY KEY (file, start)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS digests (
    digest TEXT PRIMARY KEY,
    record_id TEXT,
    target_uri TEXT NOT NULL,
    date TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS captured (
    url TEXT PRIMARY KEY,              -- a URL captured with GET (crawls that use a browser)
    location TEXT NOT NULL             -- its latest primary record: "WARC-FILE OFFSET LENGTH"
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS media_bytes (
    page TEXT PRIMARY KEY,             -- a page whose requisites include media
    bytes INTEGER NOT NULL             -- the media bytes captured for it so far
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS seeds (
    key INTEGER PRIMARY KEY,           -- archiver.policy.seeds.seed_key of the seed's URL
    spec TEXT NOT NULL                 -- its table of rules, as given (JSON)
);
