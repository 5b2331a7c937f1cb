-- Why a prefetch job has nothing to fetch, when it has not (e.g. a local dataset's raw files are
-- read in place); NULL otherwise.
ALTER TABLE jobs ADD COLUMN note TEXT;
