-- 1 M rows into an in-memory table with two indexes, then queries whose
-- answers do not depend on the allocator.
PRAGMA cache_size = -200000;
CREATE TABLE t (a INTEGER, b TEXT, c REAL);
CREATE INDEX t_a ON t (a);
CREATE INDEX t_b ON t (b);
WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < 1000000)
INSERT INTO t SELECT (i * 7919) % 1000003, printf('key-%08d-%d', (i * 104729) % 1000000, i % 7), i * 0.5 FROM s;
SELECT count(*), sum(a), count(DISTINCT b), max(c) FROM t;
SELECT b FROM t WHERE a BETWEEN 5000 AND 5010 ORDER BY b;
