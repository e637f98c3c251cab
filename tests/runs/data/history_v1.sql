-- The version 1 history file kept for the migration test, made with
--   sqlite3 history_v1.sqlite < history_v1.sql
-- Never change it: it stands for files that version 1 wrote.

CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  started_at TEXT NOT NULL,
  finished_at TEXT,
  label TEXT NOT NULL DEFAULT '',
  model TEXT NOT NULL DEFAULT '',
  traffic TEXT NOT NULL DEFAULT '',
  target TEXT NOT NULL DEFAULT '',
  duration_s REAL NOT NULL DEFAULT 0,
  seed INTEGER NOT NULL DEFAULT 0,
  options TEXT NOT NULL DEFAULT '{}',
  context TEXT NOT NULL DEFAULT '{}',
  summary TEXT NOT NULL DEFAULT '{}');
CREATE TABLE requests(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  idx INTEGER NOT NULL,
  intended_ns INTEGER, sent_ns INTEGER, done_ns INTEGER,
  outcome INTEGER NOT NULL, http_status INTEGER NOT NULL,
  batch_id INTEGER NOT NULL, batch_size INTEGER NOT NULL);
CREATE INDEX requests_run ON requests(run_id);
CREATE TABLE batches(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  id INTEGER NOT NULL, size INTEGER NOT NULL, reason INTEGER NOT NULL,
  lane INTEGER NOT NULL, failed INTEGER NOT NULL, depth_after INTEGER NOT NULL,
  oldest_ns INTEGER, batched_ns INTEGER, run_start_ns INTEGER, run_end_ns INTEGER);
CREATE INDEX batches_run ON batches(run_id);
CREATE TABLE depth(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  t_ns INTEGER, depth INTEGER NOT NULL, peak INTEGER NOT NULL);
CREATE INDEX depth_run ON depth(run_id);

PRAGMA user_version = 1;
INSERT INTO runs(kind, started_at, finished_at, label, model, traffic, target, duration_s, seed, options, context, summary)
VALUES('bench','2026-11-20T10:00:00Z','2026-11-20T10:00:02Z','poisson rate=1000 -> inproc','mlp','poisson rate=1000','inproc',2,7,
'{"strategy":"fifo","max_batch_size":8,"max_wait_us":2000,"queue_capacity":1024,"request_timeout_ms":30000,"num_lanes":1,"target_p99_ms":50}',
'{"machine":{"cpu":"v1 test"}}','{"sent":6,"ok":6}');
INSERT INTO runs(kind, started_at, finished_at, label, model, traffic, target, duration_s, seed, options, context, summary)
VALUES('recorded','2026-11-21T09:30:00Z',NULL,'live poisson rate=200','linear','poisson rate=200','inproc',0,0,'{}','{}','{}');
INSERT INTO requests VALUES(1,0,0,2000,900000,0,0,1,2);
INSERT INTO requests VALUES(1,1,1000000,1002000,1900000,0,0,1,2);
INSERT INTO requests VALUES(1,2,2000000,2002000,2900000,0,0,2,2);
INSERT INTO requests VALUES(1,3,3000000,3002000,3900000,0,0,2,2);
INSERT INTO requests VALUES(1,4,4000000,4002000,4900000,0,0,3,2);
INSERT INTO requests VALUES(1,5,5000000,5002000,5900000,0,0,3,2);
INSERT INTO batches VALUES(1,1,2,0,0,0,0,0,500000,510000,800000);
INSERT INTO depth VALUES(1,0,0,1);
INSERT INTO batches VALUES(1,2,2,0,0,0,0,2000000,2500000,2510000,2800000);
INSERT INTO depth VALUES(1,1000000,1,2);
INSERT INTO batches VALUES(1,3,2,0,0,0,0,4000000,4500000,4510000,4800000);
INSERT INTO depth VALUES(1,2000000,2,3);
INSERT INTO requests VALUES(2,0,0,0,700000,0,0,1,1);
INSERT INTO requests VALUES(2,1,5000000,5000000,5700000,0,0,2,1);
INSERT INTO requests VALUES(2,2,10000000,10000000,10700000,0,0,3,1);
INSERT INTO requests VALUES(2,3,15000000,15000000,15700000,0,0,4,1);
