-- The hub commits a server has read, with their dates: a revision asked again as this commit
-- (a restart, another replica) is served from the hub cache without asking the hub anything.
CREATE TABLE IF NOT EXISTS hub_commits (
    repo TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    -- The commit's date (YYYY-MM-DD) as the hub gave it; empty when it gave none.
    commit_date TEXT NOT NULL,
    PRIMARY KEY (repo, commit_sha)
);
