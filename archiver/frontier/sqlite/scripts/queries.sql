-- The SQLite frontier's statements, by name: each starts at its "-- name:" line and runs to
-- the next one (sql.py reads them). "$STATE" names a per-URL state of codec.py (a literal in
-- the text: the partial index urls_queue is used only for a constant state); "$rows",
-- "$marks", "$sets" and "$parts" are filled per batch size (database.py pads batches to a
-- power of two, so a few texts repeat and stay prepared).

-- name: add-extra-column
-- a database written before --extra-hops: every item is 0
ALTER TABLE urls ADD COLUMN extra INTEGER NOT NULL DEFAULT 0

-- name: add-found-by-column
-- a database written before extractors were named: none named
ALTER TABLE urls ADD COLUMN found_by TEXT NOT NULL DEFAULT ''

-- name: add-page-column
-- a database written before requisites named their page: each one's page is its via
ALTER TABLE urls ADD COLUMN page TEXT NOT NULL DEFAULT ''

-- name: add-seed-column
-- a database written before per-seed rules: every item is judged by the crawl's own (0)
ALTER TABLE urls ADD COLUMN seed INTEGER NOT NULL DEFAULT 0

-- name: schema-version
SELECT value FROM meta WHERE key = 'schema'

-- name: schema-version-set
INSERT INTO meta VALUES ('schema', ?)

-- name: state-counts
SELECT state, count(*) FROM urls GROUP BY state

-- name: list-urls
-- archiver queue: the URLs in some states, in the order they were first queued ($marks: one
-- placeholder per state)
SELECT state, url FROM urls WHERE state IN ($marks) ORDER BY id

-- name: open-requeue
-- what a process held (leased, or in its memory window) is queued again when it reopens
UPDATE urls SET state = $QUEUED WHERE state IN ($IN_FLIGHT, $WINDOWED)

-- name: hosts
SELECT id, host FROM hosts

-- name: queued-by-host
SELECT host, count(*) FROM urls WHERE state = $QUEUED GROUP BY host

-- name: max-seq
SELECT max(seq) FROM urls

-- name: waiting
-- the columns of codec.waiting_item
SELECT url, tries, redirects_left, depth, hops, via, not_before, extra, found_by, page, seed
FROM urls WHERE state = $WAITING ORDER BY seq

-- name: seen-urls
SELECT url FROM urls

-- name: digest-count
SELECT count(*) FROM digests

-- name: digest-all
SELECT digest FROM digests

-- name: files
SELECT id, name FROM files

-- name: host-insert
INSERT INTO hosts (id, host) SELECT * FROM (VALUES $rows) WHERE column1 IS NOT NULL

-- name: url-seen
-- which of these URLs are in the seen set (one JSON text: one step, the GIL released once)
SELECT json_group_array(url) FROM urls WHERE url IN ($marks)

-- name: url-insert
-- the columns of codec.url_row
INSERT INTO urls (url, host, state, seq, tries, redirects_left, depth, hops, via, extra,
found_by, page, seed)
SELECT * FROM (VALUES $rows) WHERE column1 IS NOT NULL

-- name: url-update
-- $sets: "column = v.column2, ..." for the columns one group of updates sets
UPDATE urls SET $sets FROM (VALUES $rows) AS v WHERE urls.url = v.column1

-- name: file-insert
INSERT OR IGNORE INTO files (name) SELECT value FROM json_each(?)

-- name: file-ids
SELECT json_group_array(json_array(id, name)) FROM files
WHERE name IN (SELECT value FROM json_each(?))

-- name: capture-insert
INSERT OR REPLACE INTO captures (file, start, end, url)
SELECT v.column1, v.column2, v.column3, urls.id FROM (VALUES $rows) AS v
JOIN urls ON urls.url = v.column4

-- name: digest-insert
INSERT OR IGNORE INTO digests (digest, record_id, target_uri, date)
SELECT * FROM (VALUES $rows) WHERE column1 IS NOT NULL

-- name: digest-get
SELECT json_group_array(json_array(digest, record_id, target_uri, date)) FROM digests
WHERE digest IN ($marks)

-- name: refill-part
-- one host's oldest queued URLs (the columns of codec.refilled_item); "refill" joins one part
-- per host with UNION ALL
SELECT * FROM (SELECT id, host, url, tries, redirects_left, depth, hops, via, seq, extra,
found_by, page, seed FROM urls WHERE host = ? AND state = $QUEUED ORDER BY seq LIMIT ?)

-- name: refill
SELECT json_group_array(json_array(id, host, url, tries, redirects_left, depth, hops, via, seq,
extra, found_by, page, seed)) FROM ($parts)

-- name: windowed
UPDATE urls SET state = $WINDOWED WHERE id IN ($marks)

-- name: committed
SELECT start, end FROM captures WHERE file = ?

-- name: captured-add
INSERT OR REPLACE INTO captured (url, location) VALUES (?, ?)

-- name: captured-get
SELECT location FROM captured WHERE url = ?

-- name: media-add
INSERT INTO media_bytes (page, bytes) VALUES (?, ?)
ON CONFLICT (page) DO UPDATE SET bytes = bytes + excluded.bytes

-- name: media-get
SELECT bytes FROM media_bytes WHERE page = ?

-- name: seeds-add
-- one row per seed (executemany: seeds are few, and kept once per run)
INSERT OR REPLACE INTO seeds (key, spec) VALUES (?, ?)

-- name: seeds-get
SELECT json_group_array(json_array(key, spec)) FROM seeds
WHERE key IN (SELECT value FROM json_each(?))

-- name: uncommit-urls
SELECT DISTINCT url FROM captures WHERE file = ? AND start >= ?

-- name: uncommit-captures
DELETE FROM captures WHERE file = ? AND start >= ?

-- name: uncommit-counts
SELECT host, state, count(*) FROM urls WHERE id IN (SELECT value FROM json_each(?))
AND state IN ($DONE, $FAILED, $SKIPPED) GROUP BY host, state

-- name: uncommit-requeue
UPDATE urls SET state = $QUEUED, status = NULL, reason = NULL
WHERE id IN (SELECT value FROM json_each(?)) AND state IN ($DONE, $FAILED, $SKIPPED)
