-- Owned and created by goose, never by our migrations. Declared here only so
-- sqlc can type the schema-version query in sql/queries/schema.sql.
CREATE TABLE goose_db_version (
    id         serial PRIMARY KEY,
    version_id bigint NOT NULL,
    is_applied boolean NOT NULL,
    tstamp     timestamp NOT NULL DEFAULT now()
);
