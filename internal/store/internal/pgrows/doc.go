// Package pgrows holds the database code written by hand on sqlc's
// statements and row types: the pipelines ingest sends as one round trip
// (pipeline.go) and the scans of the two largest reads into buffers the
// caller keeps (walk.go, deliveries.go). It sits beside the generated
// package rather than in it, so that internal/db holds only sqlc's output;
// each file's tests hold it to what sqlc generates for the same statement.
package pgrows
